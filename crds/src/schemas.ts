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

/** A credential: an environment variable of the gateway (file source) or a Secret key (Kubernetes). */
export const CredentialRef = Type.Union([
  Strict({ env: Type.String({ minLength: 1, description: 'Environment variable holding the value (file source).' }) }),
  Strict({ secretRef: Strict({ name: dnsName, key: Type.String({ minLength: 1 }) }) }, { additionalProperties: false }),
]);

export const PROVIDERS = ['openai', 'anthropic', 'gemini', 'vertex', 'bedrock', 'azure'] as const;
/** Providers whose public endpoint is known, so that baseURL may be left out. */
const PROVIDERS_WITH_DEFAULT_URL = ['anthropic', 'gemini', 'vertex', 'bedrock'];
/** Providers that speak OpenAI's files, batches and threads APIs (the others are translated, chat and embeddings only). */
const PROVIDERS_WITH_FILES = ['openai', 'azure'];

export const UpstreamSpec = Strict(
  {
    provider: Type.Optional(
      Type.Unsafe<(typeof PROVIDERS)[number]>({
        type: 'string',
        enum: [...PROVIDERS],
        description:
            'The API the upstream speaks: openai (any OpenAI-compatible API, the default), anthropic (the Messages API), gemini (the Gemini API), vertex (Vertex AI), bedrock (Amazon Bedrock Converse), azure (Azure OpenAI deployments). Requests are translated for anthropic, gemini, vertex and bedrock.',
      }),
    ),
    baseURL: Type.Optional(
      Type.String({
        format: 'uri',
        pattern: '^https?://',
        description:
          "OpenAI-compatible base URL, including /v1 where the provider needs it. For anthropic, gemini, vertex and bedrock: the origin the provider's own SDK takes (https://api.anthropic.com), optional, defaulting to the provider's public endpoint; for azure the resource's endpoint (https://NAME.openai.azure.com).",
      }),
    ),
    credentials: Type.Optional(
      Type.Union(CredentialRef.anyOf, {
        description:
          'The API key (openai: sent as a Bearer token; anthropic: x-api-key; gemini: x-goog-api-key; azure: api-key), or for vertex the service-account key JSON that Google issues (without it, vertex uses Google Application Default Credentials: GKE Workload Identity, Cloud Run, the metadata server, GOOGLE_APPLICATION_CREDENTIALS). Bedrock takes bedrock.accessKeyId/secretAccessKey instead.',
      }),
    ),
    vertex: Type.Optional(
      Strict({
        project: Type.String({ minLength: 1, description: 'The Google Cloud project id.' }),
        location: Type.String({ minLength: 1, description: 'The Vertex AI region (us-central1), or global.' }),
      }),
    ),
    bedrock: Type.Optional(
      Strict({
        region: Type.String({ pattern: '^[a-z]{2}(-[a-z]+)+-[0-9]+$', description: 'The AWS region (us-east-1).' }),
        accessKeyId: Type.Optional(CredentialRef),
        secretAccessKey: Type.Optional(CredentialRef),
        sessionToken: Type.Optional(CredentialRef),
      }, {
        [CEL]: [celRule('has(self.accessKeyId) == has(self.secretAccessKey)', 'accessKeyId and secretAccessKey go together (without both, the standard AWS credential chain is used)', 'accessKeyId')],
      }),
    ),
    azure: Type.Optional(
      Strict({
        apiVersion: Type.String({ minLength: 1, description: "Azure OpenAI's api-version query parameter (2024-10-21)." }),
      }),
    ),
    responsesAPI: Type.Optional(
      Type.Boolean({
        description:
          'OpenAI-compatible upstreams: false when the upstream has no Responses API (vLLM, Ollama, older servers); the gateway then serves POST /v1/responses for its models over chat completions, as it does for translated providers. Default true.',
      }),
    ),
    dropUnsupportedParams: Type.Optional(
      Type.Boolean({
        description:
          'Translated providers: drop request parameters the provider has no equivalent for (n, logit_bias, seed, penalties, …) instead of answering 400 naming them. Off by default.',
      }),
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
          "Keeps files, batches, threads, assistants and vector stores for the accounts whose plan reaches this upstream through a model target: requests that name no model (a file upload, a thread) go here. When several qualify, the first by name; accounts with none keep files in the gateway's own store. Only for provider openai or azure.",
      }),
    ),
  },
  {
    [CEL]: [
      celRule(`has(self.baseURL) || (has(self.provider) && self.provider in ${JSON.stringify(PROVIDERS_WITH_DEFAULT_URL)})`, 'baseURL is required unless provider is anthropic, gemini, vertex or bedrock', 'baseURL'),
      celRule("!has(self.provider) || self.provider != 'vertex' || has(self.vertex)", 'a vertex upstream needs vertex.project and vertex.location', 'vertex'),
      celRule("!has(self.provider) || self.provider != 'bedrock' || has(self.bedrock)", 'a bedrock upstream needs bedrock.region', 'bedrock'),
      celRule("!has(self.provider) || self.provider != 'azure' || has(self.azure)", 'an azure upstream needs azure.apiVersion', 'azure'),
      celRule("!has(self.vertex) || (has(self.provider) && self.provider == 'vertex')", 'vertex settings apply only to provider: vertex', 'vertex'),
      celRule("!has(self.bedrock) || (has(self.provider) && self.provider == 'bedrock')", 'bedrock settings apply only to provider: bedrock', 'bedrock'),
      celRule("!has(self.azure) || (has(self.provider) && self.provider == 'azure')", 'azure settings apply only to provider: azure', 'azure'),
      // Translated providers have no files, batches or threads API the gateway could route objects to.
      celRule(
        `!has(self.files) || !self.files || !has(self.provider) || self.provider in ${JSON.stringify(PROVIDERS_WITH_FILES)}`,
        'files: true needs provider openai or azure: anthropic, gemini, vertex and bedrock upstreams cannot keep files, batches or threads',
        'files',
      ),
    ],
  },
);

export const ModelTarget = Strict({
  upstream: dnsName,
  model: Type.Optional(Type.String({ minLength: 1, description: "Upstream's model name; defaults to the public name." })),
  // The defaults are the gateway's own; in a cluster the API server writes them into the object.
  priority: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Lower is tried first.' })),
  weight: Type.Optional(Type.Integer({ minimum: 0, default: 1, description: 'Relative share within one priority; 0 drains the target.' })),
});

/**
 * An amount of money in the gateway's currency (TOLLGATE_CURRENCY), as Kubernetes APIs write money:
 * a decimal string, never a float. At most six decimals (the gateway counts in millionths) and six
 * digits before the point, so every sum it makes stays an exact integer.
 */
export const MONEY_PATTERN = '^[0-9]{1,6}(\\.[0-9]{1,6})?$';
const money = (description: string) => Type.String({ pattern: MONEY_PATTERN, description: `${description} A decimal string in the gateway's currency, e.g. "2.50".` });

export const ImagePrice = Strict({
  size: Type.Optional(Type.String({ minLength: 1, description: "The request's size, e.g. 1024x1024; unset: any size." })),
  quality: Type.Optional(Type.String({ minLength: 1, description: "The request's quality (standard, hd, low, medium, high); unset: any quality." })),
  price: money('Price of one image of this size and quality.'),
});

export const ModelPricing = Strict({
  inputPerMillion: Type.Optional(money('Price of a million input (prompt) tokens.')),
  cachedInputPerMillion: Type.Optional(money('Price of a million input tokens the provider served from its prompt cache; defaults to inputPerMillion.')),
  outputPerMillion: Type.Optional(money('Price of a million output tokens, reasoning tokens included.')),
  perImage: Type.Optional(
    Strict({
      default: Type.Optional(money('Price of one image that no entry of `prices` matches.')),
      prices: Type.Optional(Type.Array(ImagePrice, { description: 'By size and quality: the first entry that matches the request wins.' })),
    }),
  ),
  perAudioSecond: Type.Optional(money('Price of a second of audio transcribed or translated.')),
  perMillionCharacters: Type.Optional(money('Price of a million characters of text turned into speech.')),
  perRequest: Type.Optional(money('The least any request to this model costs (a floor, not an extra).')),
});

export const ModelSpec = Strict({
  targets: Type.Array(ModelTarget, { minItems: 1 }),
  ownedBy: Type.Optional(Type.String({ description: 'Shown as owned_by in GET /v1/models.' })),
  capabilities: Type.Optional(Type.Array(Type.String(), { description: 'Free-form hints such as chat, embeddings, images, audio, batches.' })),
  pricing: Type.Optional(ModelPricing),
  maxOutputTokens: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 10_000_000,
      description:
        "The most output tokens one answer of this model can have (its provider's limit). Under a spend budget, a request that sets no output limit is held to this (or to what the budget still pays for) instead of the gateway's default reservation (TOLLGATE_RESERVED_OUTPUT_TOKENS).",
    }),
  ),
});

export const PlanLimits = Strict({
  requestsPerMinute: Type.Optional(positiveInt('Requests per minute, per account.')),
  tokensPerMinute: Type.Optional(positiveInt('Tokens (input + output) per minute, per account.')),
  concurrentRequests: Type.Optional(positiveInt('Open requests and streams at once, per account.')),
  tokensPerMonth: Type.Optional(positiveInt('Token budget per calendar month, per account.')),
  spendPerMonth: Type.Optional(money('Budget in money per calendar month (UTC), per account (on an ApiKey: per key), priced by the Models\' pricing.')),
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
export type CredentialRef = Static<typeof CredentialRef>;
export type ProviderName = (typeof PROVIDERS)[number];
export type ModelTarget = Static<typeof ModelTarget>;
export type ModelSpec = Static<typeof ModelSpec>;
export type ModelPricing = Static<typeof ModelPricing>;
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
