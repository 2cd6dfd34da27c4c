// How upstream failures look to a client: always OpenAI's error body, never the upstream's secrets.
import { ApiError } from '../http/errors.ts';

/** Removes the upstream credential from any text that is about to leave the gateway. */
export function scrub(text: string, secret: string | null | undefined): string {
  // includes() first: the common case (no secret in the text) then allocates nothing.
  return secret && text.includes(secret) ? text.split(secret).join('[redacted]') : text;
}

/** An upstream 4xx, relayed with its own status and message in the OpenAI shape. */
export function relayedClientError(status: number, bodyText: string, secret: string | null | undefined, retryHeaders: Record<string, string> = {}): ApiError {
  let error: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(bodyText);
    if (parsed && typeof parsed === 'object') error = (parsed.error && typeof parsed.error === 'object' ? parsed.error : parsed) as Record<string, unknown>;
  } catch {
    error = { message: bodyText.slice(0, 500) };
  }
  const message = typeof error.message === 'string' && error.message ? error.message : `The upstream provider answered ${status}.`;
  const code = typeof error.code === 'string' ? error.code : status === 429 ? 'rate_limit_exceeded' : 'upstream_error';
  const type = typeof error.type === 'string' ? error.type : status === 429 ? 'rate_limit_error' : 'invalid_request_error';
  return new ApiError(status, code, scrub(message, secret), {
    type: type as ApiError['type'],
    param: typeof error.param === 'string' ? error.param : null,
    headers: retryHeaders,
  });
}

export function upstreamAuthFailed(upstream: string): ApiError {
  // The client's key was fine; the gateway's own credential for the upstream was refused.
  return new ApiError(502, 'upstream_auth_failed', `The upstream provider '${upstream}' refused the gateway's credentials. This is a gateway configuration problem; retrying will not help until an operator fixes it.`);
}

/** `subject` names what was asked for, quoted: `'gpt-4o'`, or `'files-upstream' (files, batches, threads)`. */
export function upstreamTimeout(subject: string): ApiError {
  return new ApiError(504, 'upstream_timeout', `The upstream provider for ${subject} did not answer in time.`, { timedOut: true });
}

export function noTargetLeft(subject: string, retryAfterSeconds: number, detail: string): ApiError {
  return new ApiError(503, 'upstream_unavailable', `No upstream for ${subject} is available right now${detail ? ` (${detail})` : ''}. Retry later.`, {
    headers: { 'Retry-After': String(Math.max(1, retryAfterSeconds)) },
  });
}

export function missingCredential(upstream: string): ApiError {
  return new ApiError(502, 'upstream_credentials_missing', `The gateway has no credentials for the upstream provider '${upstream}'. This is a gateway configuration problem.`);
}
