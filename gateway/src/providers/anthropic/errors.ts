// Anthropic's errors ({"type":"error","error":{"type","message"},"request_id"}) as the client must
// see them. The status matters most (the SDKs retry on it, the fallback moves on on it): 529
// `overloaded_error` becomes 503 with a Retry-After, a refused API key is the gateway's problem (502,
// never a 401 the client would blame on its own key), 429 keeps Anthropic's retry-after.
import type { TranslatedError } from '../provider.ts';
import { ProviderStreamError } from '../provider.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Seconds a client is told to wait after an overload Anthropic gave no retry-after for. */
const OVERLOAD_RETRY_AFTER = '1';

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Anthropic's error type and message from a body, when it is one of its envelopes. */
export function anthropicError(text: string): { type: string | null; message: string | null } {
  try {
    const body: unknown = JSON.parse(text);
    const error = isObject(body) ? body.error : undefined;
    if (isObject(error)) {
      return { type: typeof error.type === 'string' ? error.type : null, message: typeof error.message === 'string' ? error.message : null };
    }
  } catch {
    // not JSON: a proxy's page, an empty body
  }
  return { type: null, message: null };
}

export function translateError(status: number, headers: Record<string, string | string[] | undefined>, text: string): TranslatedError {
  const { type, message: upstreamMessage } = anthropicError(text);
  const message = upstreamMessage ? `Anthropic: ${upstreamMessage}` : `Anthropic answered HTTP ${status}.`;
  const retryAfter = header(headers, 'retry-after');
  const base = { message, param: null };

  if (status === 401 || type === 'authentication_error') {
    return { ...base, status: 502, type: 'server_error', code: 'upstream_auth_failed', message: 'Anthropic refused the API key configured for this model.', credentialRefused: true };
  }
  if (status === 529 || type === 'overloaded_error') {
    return { ...base, status: 503, type: 'server_error', code: 'upstream_overloaded', retryAfter: retryAfter ?? OVERLOAD_RETRY_AFTER };
  }
  if (type === 'billing_error') return { ...base, status: 429, type: 'insufficient_quota', code: 'insufficient_quota' };
  if (status === 429 || type === 'rate_limit_error') {
    return { ...base, status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', ...(retryAfter ? { retryAfter } : {}) };
  }
  if (status === 403 || type === 'permission_error') return { ...base, status: 403, type: 'permission_error', code: 'upstream_permission_denied' };
  if (status === 404 || type === 'not_found_error') return { ...base, status: 404, type: 'not_found_error', code: 'model_not_found' };
  if (status === 413 || type === 'request_too_large') return { ...base, status: 413, type: 'invalid_request_error', code: 'request_too_large' };
  if (status === 504 || type === 'timeout_error') return { ...base, status: 504, type: 'server_error', code: 'upstream_timeout' };
  if (status >= 500) {
    const unavailable = status === 502 || status === 503;
    return { ...base, status: unavailable ? 503 : 500, type: 'server_error', code: 'upstream_error', ...(retryAfter ? { retryAfter } : {}) };
  }
  const tooLong = /prompt is too long|context window|too many (input )?tokens/i.test(upstreamMessage ?? '');
  return { ...base, status: 400, type: 'invalid_request_error', code: tooLong ? 'context_length_exceeded' : 'invalid_request_error' };
}

/** An `event: error` inside a 200 stream, as the in-band error the client's SDK raises. */
export function streamError(data: string): ProviderStreamError {
  const { type, message } = anthropicError(data);
  const text = message ? `Anthropic: ${message}` : 'Anthropic reported an error in the stream.';
  switch (type) {
    case 'overloaded_error':
      return new ProviderStreamError(text, 'upstream_overloaded', 'server_error');
    case 'rate_limit_error':
      return new ProviderStreamError(text, 'rate_limit_exceeded', 'rate_limit_error');
    case 'invalid_request_error':
      return new ProviderStreamError(text, 'invalid_request_error', 'invalid_request_error');
    default:
      return new ProviderStreamError(text, 'upstream_stream_error', 'server_error');
  }
}
