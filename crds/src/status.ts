// What the operator writes into each kind's status, through the /status subresource only. The CRDs
// carry these schemas, so the API server prunes a field that is not declared here: a new status field
// is added here first. Conditions follow the Kubernetes API conventions (metav1.Condition), listed as a
// map keyed by `type`. Like the specs, these are public: add fields, rename none.
import { Type, type ObjectOptions, type Static, type TProperties, type TSchema } from '@sinclair/typebox';

function Strict<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/** The condition types the operator sets; `Ready` on every kind sums the others up. */
export const CONDITION_TYPES = {
  /** Every kind: the object is usable as written. */
  Ready: 'Ready',
  /** Every kind that names others (ApiKey → Account → Plan → Models → Upstreams, Secrets). */
  ResolvedRefs: 'ResolvedRefs',
  /** Upstream: its credentials were accepted by GET /models (401/403 → False). */
  CredentialsValid: 'CredentialsValid',
  /** Upstream: the last probe got an answer. */
  Reachable: 'Reachable',
  /** Model: at least one target is reachable and offers the target model. */
  TargetsAvailable: 'TargetsAvailable',
  /** Account: the plan's monthly token budget is used up. */
  BudgetExhausted: 'BudgetExhausted',
  /** ApiKey: spec.expiresAt has passed. */
  Expired: 'Expired',
  /** ApiKey: spec.revoked is true. */
  Revoked: 'Revoked',
} as const;

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

/** metav1.Condition, with the same validations the Kubernetes API types declare. */
export const Condition = Strict({
  type: Type.String({
    pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    maxLength: 316,
    description: 'CamelCase condition type, e.g. Ready, ResolvedRefs.',
  }),
  status: Type.String({ enum: [...CONDITION_STATUSES] }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'The metadata.generation this condition was computed from.' })),
  lastTransitionTime: Type.String({ format: 'date-time', description: 'When status last changed (not when the condition was last written).' }),
  reason: Type.String({ pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$', minLength: 1, maxLength: 1024, description: 'CamelCase, machine-readable.' }),
  message: Type.String({ maxLength: 32768, description: 'What a person can act on.' }),
});

const conditions = Type.Array(Condition, {
  maxItems: 16,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  description: 'Current state, one entry per condition type.',
});
const observedGeneration = Type.Integer({ minimum: 0, description: 'The metadata.generation the operator last reconciled.' });
const nonNegative = (description: string) => Type.Integer({ minimum: 0, description });

function StatusOf<T extends TProperties>(properties: T) {
  return Strict({ conditions: Type.Optional(conditions), observedGeneration: Type.Optional(observedGeneration), ...properties });
}

export const UpstreamStatus = StatusOf({
  reachable: Type.Optional(Type.Boolean({ description: 'The last probe got an answer.' })),
  latencyMs: Type.Optional(nonNegative("The last probe's round trip.")),
  models: Type.Optional(Type.Array(Type.String(), { description: 'Model ids the upstream offered at the last successful probe.' })),
  lastProbeTime: Type.Optional(Type.String({ format: 'date-time' })),
  probeTarget: Type.Optional(Type.String({ description: "The call the probe makes: GET {baseURL}/models, or a translated provider's cheapest authenticated call." })),
});

export const ModelTargetStatus = Strict({
  upstream: Type.String(),
  model: Type.String({ description: "The upstream's model name this target asks for." }),
  available: Type.Boolean({ description: 'The upstream is reachable and offers the model.' }),
  message: Type.Optional(Type.String({ description: 'Why not, when it is not available.' })),
});

export const ModelStatus = StatusOf({
  targets: Type.Optional(Type.Array(ModelTargetStatus, { description: 'One entry per spec.targets entry, in the same order.' })),
});

export const PlanStatus = StatusOf({});

export const AccountUsage = Strict({
  month: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The calendar month (UTC) counted, YYYY-MM.' }),
  inputTokens: nonNegative('Input tokens this month, summed over every gateway replica.'),
  outputTokens: nonNegative('Output tokens this month, summed over every gateway replica.'),
  requests: nonNegative('Requests this month, summed over every gateway replica.'),
  spend: Type.Optional(Type.String({ description: 'This month\'s spend with its currency, summed over every gateway replica, e.g. "12.34 USD".' })),
  spendRemaining: Type.Optional(Type.String({ description: "What is left of the plan's spendPerMonth, with its currency; absent without a spend budget." })),
  budgetRemaining: Type.Optional(Type.Integer({ description: "Tokens left of the plan's tokensPerMonth (negative once overspent); absent without a budget." })),
  resetsAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the budget starts again (the next month, UTC).' })),
  summary: Type.Optional(Type.String({ description: 'One line for kubectl get, e.g. "1.2M tokens (40% of 3M)".' })),
});

export const AccountStatus = StatusOf({
  usage: Type.Optional(AccountUsage),
});

export const API_KEY_PHASES = ['Pending', 'Active', 'Expired', 'Revoked'] as const;

export const ApiKeyStatus = StatusOf({
  phase: Type.Optional(Type.String({ enum: [...API_KEY_PHASES], description: 'Pending until a key is issued or its account resolves; then Active, Expired or Revoked.' })),
  expired: Type.Optional(Type.Boolean()),
  revoked: Type.Optional(Type.Boolean()),
  issuedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the operator wrote a generated key into spec.secretName.' })),
  usage: Type.Optional(
    Strict({
      month: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The calendar month (UTC) counted, YYYY-MM.' }),
      inputTokens: nonNegative('Input tokens this month through this key.'),
      outputTokens: nonNegative('Output tokens this month through this key.'),
      requests: nonNegative('Requests this month through this key.'),
      spend: Type.String({ description: 'This month\'s spend through this key, with its currency, e.g. "1.25 USD".' }),
    }),
  ),
});

export const STATUS_SCHEMAS = {
  Upstream: UpstreamStatus,
  Model: ModelStatus,
  Plan: PlanStatus,
  Account: AccountStatus,
  ApiKey: ApiKeyStatus,
} as const satisfies Record<string, TSchema>;

export type Condition = Static<typeof Condition>;
export type UpstreamStatus = Static<typeof UpstreamStatus>;
export type ModelTargetStatus = Static<typeof ModelTargetStatus>;
export type ModelStatus = Static<typeof ModelStatus>;
export type PlanStatus = Static<typeof PlanStatus>;
export type AccountUsage = Static<typeof AccountUsage>;
export type AccountStatus = Static<typeof AccountStatus>;
export type ApiKeyStatus = Static<typeof ApiKeyStatus>;
