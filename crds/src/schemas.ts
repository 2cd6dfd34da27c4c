// The resource contract, written once. These TypeBox schemas are plain JSON Schema (OpenAPI v3
// compatible), so the same objects validate the standalone YAML file, the Kubernetes informer feed,
// and are emitted as the CRDs' openAPIV3Schema. Add fields freely; rename none (they are public).
import { Type, type ObjectOptions, type Static, type TProperties, type TSchema } from '@sinclair/typebox';

/** Specs refuse unknown fields so that a typo (`requestPerMinute`) is an error, not a silent no-op. */
function Strict<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

export const GROUP = 'tollgate.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/**
 * Cross-field rules the API server checks at admission (`x-kubernetes-validations`, CEL with `self`
 * bound to the object the rule sits on). Ajv ignores the keyword; the file source checks what it
 * needs itself.
 */
export const CEL = 'x-kubernetes-validations';
export interface CelRule {
  rule: string;
  message: string;
  /** Where the refusal points, relative to the object the rule sits on (`.connectMs`). */
  fieldPath?: string;
}
function celRule(rule: string, message: string, field?: string): CelRule {
  return { rule, message, ...(field ? { fieldPath: `.${field}` } : {}) };
}

const dnsNameOf = (description: string) => Type.String({ pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', maxLength: 253, description });
const dnsName = dnsNameOf('A DNS-1123 subdomain, as Kubernetes requires for object names.');

export const ObjectMeta = Type.Object(
  {
    name: dnsName,
    namespace: Type.Optional(Type.String()),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
    generation: Type.Optional(Type.Integer()),
    resourceVersion: Type.Optional(Type.String()),
    uid: Type.Optional(Type.String()),
    creationTimestamp: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const positiveInt = (description: string) => Type.Integer({ minimum: 1, description });

export const UpstreamSpec = Strict({
  baseURL: Type.String({ format: 'uri', pattern: '^https?://', description: 'OpenAI-compatible base URL, including /v1 where the provider needs it.' }),
  credentials: Type.Optional(
    Type.Union([
      Strict({ env: Type.String({ minLength: 1, description: 'Environment variable holding the upstream API key (file source).' }) }),
      Strict(
        { secretRef: Strict({ name: dnsName, key: Type.String({ minLength: 1 }) }) },
        { additionalProperties: false },
      ),
    ]),
  ),
  headers: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Extra headers sent upstream (no secrets: use credentials).' })),
  timeouts: Type.Optional(
    Strict(
      {
        connectMs: Type.Optional(positiveInt('TCP/TLS connect timeout.')),
        firstByteMs: Type.Optional(positiveInt('Time allowed until the first response byte.')),
        totalMs: Type.Optional(positiveInt('Time allowed for the whole exchange.')),
        idleMs: Type.Optional(positiveInt('Longest silence between stream chunks.')),
      },
      {
        [CEL]: [
          celRule('!has(self.totalMs) || !has(self.connectMs) || self.connectMs <= self.totalMs', 'connectMs must not exceed totalMs', 'connectMs'),
          celRule('!has(self.totalMs) || !has(self.firstByteMs) || self.firstByteMs <= self.totalMs', 'firstByteMs must not exceed totalMs', 'firstByteMs'),
        ],
      },
    ),
  ),
  maxConnections: Type.Optional(positiveInt('Connection pool size towards this upstream.')),
  files: Type.Optional(
    Type.Boolean({
      description:
        "Keeps files, batches, threads, assistants and vector stores for the accounts whose plan reaches this upstream through a model target: requests that name no model (a file upload, a thread) go here. When several qualify, the first by name; accounts with none keep files in the gateway's own store.",
    }),
  ),
});

export const ModelTarget = Strict({
  upstream: dnsName,
  model: Type.Optional(Type.String({ minLength: 1, description: "Upstream's model name; defaults to the public name." })),
  // The defaults are the gateway's own; in a cluster the API server writes them into the object.
  priority: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Lower is tried first.' })),
  weight: Type.Optional(Type.Integer({ minimum: 0, default: 1, description: 'Relative share within one priority; 0 drains the target.' })),
});

export const ModelSpec = Strict({
  targets: Type.Array(ModelTarget, { minItems: 1 }),
  ownedBy: Type.Optional(Type.String({ description: 'Shown as owned_by in GET /v1/models.' })),
  capabilities: Type.Optional(Type.Array(Type.String(), { description: 'Free-form hints such as chat, embeddings, images, audio, batches.' })),
});

export const PlanLimits = Strict({
  requestsPerMinute: Type.Optional(positiveInt('Requests per minute, per account.')),
  tokensPerMinute: Type.Optional(positiveInt('Tokens (input + output) per minute, per account.')),
  concurrentRequests: Type.Optional(positiveInt('Open requests and streams at once, per account.')),
  tokensPerMonth: Type.Optional(positiveInt('Token budget per calendar month, per account.')),
});

export const PlanBilling = Strict({
  paymentLink: Type.Optional(
    Type.String({
      format: 'uri',
      pattern: '^https://',
      maxLength: 2048,
      description:
        "The payment page that upgrades an account to this plan (a Stripe Payment Link, say). The account area opens it with the account's name as client_reference_id; the payment's metadata.plan names this Plan.",
    }),
  ),
});

export const PlanSpec = Strict({
  models: Type.Array(Type.String({ minLength: 1, description: 'A model name or a glob such as gpt-4o*.' })),
  limits: Type.Optional(PlanLimits),
  billing: Type.Optional(PlanBilling),
});

/**
 * One person who may use the account area for an Account: by e-mail address (as the IdP asserts it,
 * verified) or by the IdP's subject (`sub`), exactly one of the two.
 */
export const AccountMember = Strict(
  {
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$', description: 'An e-mail address the IdP has verified; compared without regard to case.' })),
    subject: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "The IdP's stable subject identifier (the ID token's sub claim)." })),
    role: Type.Unsafe<'owner' | 'member'>(
      Type.String({
        enum: ['owner', 'member'],
        description: 'owner: sees the account, creates and revokes its keys and upgrades its plan; member: sees the account, its keys and its usage.',
      }),
    ),
  },
  { [CEL]: [celRule('has(self.email) != has(self.subject)', 'a member names exactly one of email or subject')] },
);

export const AccountSpec = Strict({
  plan: Type.Optional(dnsName),
  displayName: Type.Optional(Type.String()),
  members: Type.Optional(
    Type.Array(AccountMember, {
      maxItems: 100,
      description: 'Who may sign in to the account area for this account (e-mail addresses or IdP subjects), each an owner or a member.',
    }),
  ),
  cors: Type.Optional(
    Strict({
      allowedOrigins: Type.Array(Type.String({ minLength: 1, description: "An origin such as https://app.example.com, or '*'." }), {
        description: "Browser origins allowed to call the API with this account's keys (CORS), besides TOLLGATE_CORS_ORIGINS.",
      }),
    }),
  ),
});

export const ApiKeySpec = Strict(
  {
    account: dnsName,
    keyHash: Type.Optional(
      Type.String({ pattern: '^sha256:[0-9a-f]{64}$', description: 'sha256:<hex of SHA-256 of the full key>. The key itself is never stored. Written by the operator when it issues the key into secretName.' }),
    ),
    secretName: Type.Optional(
      dnsNameOf('Kubernetes only: with no keyHash, the operator generates a key, writes it once into this Secret (owned by the ApiKey) and its hash into keyHash.'),
    ),
    revoked: Type.Optional(Type.Boolean()),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
    limits: Type.Optional(PlanLimits),
  },
  { [CEL]: [celRule('has(self.keyHash) || has(self.secretName)', 'either keyHash (a key hashed by `tollgate keys create`) or secretName (the operator issues a key into that Secret) is required')] },
);

export const SPEC_SCHEMAS = {
  Upstream: UpstreamSpec,
  Model: ModelSpec,
  Plan: PlanSpec,
  Account: AccountSpec,
  ApiKey: ApiKeySpec,
} as const satisfies Record<string, TSchema>;

export type Kind = keyof typeof SPEC_SCHEMAS;
export const KINDS = Object.keys(SPEC_SCHEMAS) as Kind[];

export const PLURALS: Record<Kind, string> = {
  Upstream: 'upstreams',
  Model: 'models',
  Plan: 'plans',
  Account: 'accounts',
  ApiKey: 'apikeys',
};

export type ObjectMeta = Static<typeof ObjectMeta>;
export type UpstreamSpec = Static<typeof UpstreamSpec>;
export type ModelTarget = Static<typeof ModelTarget>;
export type ModelSpec = Static<typeof ModelSpec>;
export type PlanLimits = Static<typeof PlanLimits>;
export type PlanSpec = Static<typeof PlanSpec>;
export type PlanBilling = Static<typeof PlanBilling>;
export type AccountMember = Static<typeof AccountMember>;
export type AccountSpec = Static<typeof AccountSpec>;
export type ApiKeySpec = Static<typeof ApiKeySpec>;

export interface Resource<K extends Kind = Kind, S = Static<(typeof SPEC_SCHEMAS)[K]>> {
  apiVersion: typeof API_VERSION;
  kind: K;
  metadata: ObjectMeta;
  spec: S;
  status?: Record<string, unknown>;
}

export type Upstream = Resource<'Upstream'>;
export type Model = Resource<'Model'>;
export type Plan = Resource<'Plan'>;
export type Account = Resource<'Account'>;
export type ApiKey = Resource<'ApiKey'>;
export type AnyResource = Upstream | Model | Plan | Account | ApiKey;
