// The OpenTelemetry GenAI semantic conventions as Tollgate uses them: metric names in their
// Prometheus form, the recommended histogram buckets, and the mapping of routes, upstreams and errors
// onto low-cardinality attribute values. Every value here comes from a fixed list, the snapshot, or a
// number class: nothing a client writes reaches a label unchecked.
import type { Upstream } from '@tollgate/crds';
import { baseURLOf, providerOf, SEMCONV_PROVIDER } from '../providers/endpoints.ts';

/** The bucket boundaries the conventions recommend (explicit_bucket_boundaries_advisory). */
export const BUCKETS = {
  /** gen_ai.client.operation.duration and gen_ai.server.request.duration, seconds. */
  duration: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  /** gen_ai.client.token.usage, tokens. */
  tokens: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  /** gen_ai.server.time_to_first_token, seconds. */
  timeToFirstToken: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
  /** gen_ai.server.time_per_output_token, seconds. */
  timePerOutputToken: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5],
} as const;

/** The conventions' value for anything outside a known set. */
export const OTHER = '_OTHER';

/**
 * gen_ai.operation.name per route. `chat`, `text_completion`, `embeddings` and `generate_content` are the conventions'
 * well-known values; the image and audio operations have none, so they carry the OpenAI API's own
 * names, still a fixed list. Routes not listed here are not GenAI operations (files, models, health).
 */
const OPERATIONS: Record<string, string> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'text_completion',
  '/v1/responses': 'generate_content',
  '/v1/embeddings': 'embeddings',
  '/v1/images/generations': 'image_generation',
  '/v1/images/edits': 'image_edit',
  '/v1/audio/speech': 'speech',
  '/v1/audio/transcriptions': 'transcription',
  '/v1/audio/translations': 'translation',
  '/v1/messages': 'chat',
};

export function operationOf(route: string): string | null {
  return OPERATIONS[route] ?? null;
}

/** Well-known gen_ai.provider.name values, recognised by the upstream's host. */
const PROVIDER_HOSTS: Array<[suffix: string, provider: string]> = [
  ['api.openai.com', 'openai'],
  ['.openai.azure.com', 'azure.ai.openai'],
  ['.services.ai.azure.com', 'azure.ai.inference'],
  ['.models.ai.azure.com', 'azure.ai.inference'],
  ['api.anthropic.com', 'anthropic'],
  ['api.mistral.ai', 'mistral_ai'],
  ['api.groq.com', 'groq'],
  ['api.deepseek.com', 'deepseek'],
  ['api.x.ai', 'x_ai'],
  ['api.perplexity.ai', 'perplexity'],
  ['api.cohere.com', 'cohere'],
  ['generativelanguage.googleapis.com', 'gcp.gemini'],
  ['aiplatform.googleapis.com', 'gcp.vertex_ai'],
];

/** The in-process model's provider: the gateway itself. */
export const SELF_PROVIDER = 'tollgate';

export interface UpstreamIdentity {
  provider: string;
  /** server.address: the upstream's host, from its configured base URL. */
  address: string;
  port: number;
}

// Upstreams are immutable objects of a snapshot (see upstream/settings.ts): worked out once each.
const identities = new WeakMap<Upstream, UpstreamIdentity>();

export function identityOf(upstream: Upstream): UpstreamIdentity {
  let identity = identities.get(upstream);
  if (!identity) {
    const url = new URL(baseURLOf(upstream));
    const host = url.hostname.toLowerCase();
    const provider = SEMCONV_PROVIDER[providerOf(upstream)] ?? PROVIDER_HOSTS.find(([suffix]) => host === suffix || host.endsWith(suffix))?.[1] ?? OTHER;
    identity = { provider, address: host, port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 };
    identities.set(upstream, identity);
  }
  return identity;
}

/** Error codes the gateway itself answers with: a fixed set, so they may be labels as they are. */
const OWN_ERROR_CODES = new Set([
  'context_length_exceeded', 'empty_file', 'file_not_on_upstream', 'internal_error', 'invalid_api_key',
  'invalid_image_format', 'invalid_json', 'invalid_request', 'invalid_type', 'invalid_value',
  'max_tokens_per_request', 'method_not_allowed', 'missing_required_parameter', 'mixed_upstreams',
  'model_not_found', 'not_found', 'not_implemented', 'previous_response_not_found', 'rate_limit_exceeded',
  'request_aborted', 'request_too_large', 'subscription_required', 'tokens_exceed_limit', 'too_many_files',
  'unknown_parameter', 'unknown_url', 'unsupported_for_model', 'unsupported_parameter', 'unsupported_value',
  'upstream_auth_failed', 'upstream_credentials_missing', 'upstream_idle_timeout',
  'upstream_invalid_response', 'upstream_stream_error', 'upstream_timeout', 'upstream_unavailable',
  // Bodies and forms past their bounds, and a body that stopped arriving (the abort reason timeout).
  'request_timeout', 'server_busy', 'field_too_large', 'too_many_parts', 'invalid_multipart',
]);

/**
 * error.type for an answer: the error code when it is one of a known set, else the HTTP status
 * class (`4xx`, `5xx`) — an upstream's relayed error may carry any string. Null for a success.
 */
export function errorTypeOf(status: number, code: string | undefined): string | null {
  if (code && OWN_ERROR_CODES.has(code)) return code;
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  return code ? OTHER : null;
}

/** Transport failures of an upstream attempt, named for people (undici's codes are a fixed set too). */
const ATTEMPT_ERRORS: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_TOTAL_TIMEOUT: 'timeout',
  UND_ERR_SOCKET: 'connection_error',
  ECONNREFUSED: 'connection_refused',
  ECONNRESET: 'connection_reset',
  ENOTFOUND: 'dns_error',
  EAI_AGAIN: 'dns_error',
  'missing credentials': 'missing_credentials',
  breaker_open: 'circuit_open',
  'client closed': 'client_closed',
};

/** error.type for one upstream attempt: a transport class, or the answer's status class; null on success. */
export function attemptErrorTypeOf(status: number | undefined, error: string | undefined): string | null {
  if (error) return ATTEMPT_ERRORS[error] ?? OTHER;
  if (status === undefined) return OTHER;
  if (status === 429) return 'rate_limited';
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  return null;
}

/** tollgate_upstream_attempts_total's outcome: what the gateway did with the attempt. */
export function attemptOutcomeOf(status: number | undefined, error: string | undefined): string {
  if (error === 'client closed') return 'client_closed';
  if (error === 'breaker_open') return 'circuit_open';
  if (error) return 'failed';
  if (status === undefined) return 'failed';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  if (status >= 400) return 'client_error';
  return 'success';
}
