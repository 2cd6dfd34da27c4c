// A translated provider's error as the client sees it: OpenAI's body with the status the provider's
// translation decided (providers/<name>/errors.ts), its retry hint kept, no secret in the message.
import { ApiError, type ErrorType } from '../http/errors.ts';
import type { TranslatedError } from '../providers/provider.ts';
import { scrub } from './upstream-error.ts';

const DEFAULT_CODES: Record<number, string> = {
  400: 'invalid_request',
  404: 'model_not_found',
  413: 'request_too_large',
  429: 'rate_limit_exceeded',
  500: 'upstream_error',
  503: 'upstream_unavailable',
  504: 'upstream_timeout',
};

export function translatedError(error: TranslatedError, secret: string | null): ApiError {
  const headers: Record<string, string> = {};
  if (error.retryAfter) headers['retry-after'] = error.retryAfter;
  const seconds = Number(error.retryAfter);
  if (error.retryAfter && Number.isFinite(seconds)) headers['retry-after-ms'] = String(Math.round(seconds * 1000));
  return new ApiError(error.status, error.code ?? DEFAULT_CODES[error.status] ?? 'upstream_error', scrub(error.message, secret), {
    type: error.type as ErrorType,
    param: error.param,
    headers,
    timedOut: error.status === 504,
  });
}

/** The gateway's credential for a translated provider could not be had (a missing variable, a token endpoint that refused). */
export function providerCredentialFailed(upstream: string, detail: string): ApiError {
  return new ApiError(502, 'upstream_auth_failed', `The gateway could not authenticate to the upstream provider '${upstream}': ${detail} This is a gateway configuration problem; retrying will not help until an operator fixes it.`);
}
