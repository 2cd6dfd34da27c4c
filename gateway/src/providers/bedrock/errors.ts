// Bedrock's error answers (`{"message":"…"}` with the exception named in `x-amzn-errortype`, e.g.
// `ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/`) and its in-stream
// exception messages, in OpenAI's terms. A refused signature or key is the gateway's credential
// problem, never the client's; its text (AWS quotes the canonical request it expected) is not passed on.
import { ProviderStreamError, type TranslatedError } from '../provider.ts';

type Mapping = Pick<TranslatedError, 'status' | 'type' | 'code'> & { credentialRefused?: boolean };

const CREDENTIAL_EXCEPTIONS = new Set([
  'InvalidSignatureException',
  'IncompleteSignatureException',
  'IncompleteSignature',
  'UnrecognizedClientException',
  'ExpiredTokenException',
  'AccessDeniedException',
  'MissingAuthenticationTokenException',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
]);

const MAPPINGS: Record<string, Mapping> = {
  ValidationException: { status: 400, type: 'invalid_request_error', code: 'invalid_request' },
  ResourceNotFoundException: { status: 404, type: 'not_found_error', code: 'model_not_found' },
  ThrottlingException: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  ServiceQuotaExceededException: { status: 429, type: 'insufficient_quota', code: 'insufficient_quota' },
  ModelTimeoutException: { status: 504, type: 'server_error', code: 'upstream_timeout' },
  ModelNotReadyException: { status: 503, type: 'server_error', code: 'model_not_ready' },
  ServiceUnavailableException: { status: 503, type: 'server_error', code: 'service_unavailable' },
  ModelErrorException: { status: 502, type: 'server_error', code: 'model_error' },
  ModelStreamErrorException: { status: 502, type: 'server_error', code: 'model_error' },
  InternalServerException: { status: 500, type: 'server_error', code: 'internal_error' },
};

const CONTEXT_LENGTH = /too long|too many (input )?tokens|context (window|length)|maximum (context|input)|exceeds? the max/i;

/**
 * Exceptions that mean the session credentials were good once and are no longer (temporary keys past
 * their expiry, a session token replaced): fetching them afresh from the chain may mend it. A missing
 * IAM permission (AccessDeniedException) or a wrong secret (InvalidSignatureException) it would not.
 */
const EXPIRED_SESSION_EXCEPTIONS = new Set(['ExpiredTokenException', 'ExpiredToken', 'UnrecognizedClientException', 'InvalidClientTokenId']);
const EXPIRED_SESSION_TEXT = /security token included in the request is expired/i;

/** True when a 401/403 from Bedrock says the session credentials expired (the header, or the body's type or words). */
export function sessionExpired(headers: Record<string, string | string[] | undefined>, text: string): boolean {
  const body = bodyOf(text);
  const name = exceptionName(header(headers, 'x-amzn-errortype')) || exceptionName(body.type);
  return EXPIRED_SESSION_EXCEPTIONS.has(name) || EXPIRED_SESSION_TEXT.test(body.message ?? text);
}

/** `ValidationException:http://…` or `com.amazon.coral.validate#ValidationException` → `ValidationException`. */
export function exceptionName(raw: string | undefined): string {
  if (!raw) return '';
  const head = raw.split(':')[0];
  return head.includes('#') ? head.slice(head.lastIndexOf('#') + 1) : head;
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function bodyOf(text: string): { message?: string; type?: string } {
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
    const message = json.message ?? json.Message;
    return { message: typeof message === 'string' ? message : undefined, type: typeof json.__type === 'string' ? json.__type : undefined };
  } catch {
    return {};
  }
}

function byStatus(status: number): Mapping {
  if (status === 429) return MAPPINGS.ThrottlingException;
  if (status === 404) return MAPPINGS.ResourceNotFoundException;
  if (status === 401 || status === 403) return { status: 502, type: 'server_error', code: 'upstream_auth_failed', credentialRefused: true };
  if (status === 503) return MAPPINGS.ServiceUnavailableException;
  if (status >= 500) return { status, type: 'server_error', code: 'upstream_error' };
  return { status: 400, type: 'invalid_request_error', code: 'invalid_request' };
}

export function translateError(status: number, headers: Record<string, string | string[] | undefined>, text: string): TranslatedError {
  const body = bodyOf(text);
  const name = exceptionName(header(headers, 'x-amzn-errortype')) || exceptionName(body.type);
  const retryAfter = header(headers, 'retry-after');
  if (CREDENTIAL_EXCEPTIONS.has(name) || (!name && (status === 401 || status === 403))) {
    return {
      status: 502,
      type: 'server_error',
      code: 'upstream_auth_failed',
      param: null,
      credentialRefused: true,
      message: `Amazon Bedrock refused the gateway's AWS credentials (${name || `HTTP ${status}`}); check the Upstream's bedrock credentials and their IAM permissions.`,
    };
  }
  const mapping = MAPPINGS[name] ?? byStatus(status);
  const message = body.message ?? (text.trim() !== '' ? text.slice(0, 512) : `Amazon Bedrock answered HTTP ${status}.`);
  const code = mapping.status === 400 && CONTEXT_LENGTH.test(message) ? 'context_length_exceeded' : mapping.code;
  const translated: TranslatedError = { status: mapping.status, type: mapping.type, code, param: null, message: name ? `${message} (${name})` : message };
  if (retryAfter) translated.retryAfter = retryAfter;
  return translated;
}

/** An in-stream exception message (`:exception-type` is camelCase there: `throttlingException`). */
export function streamExceptionError(exceptionType: string, message: string): ProviderStreamError {
  const name = exceptionType.charAt(0).toUpperCase() + exceptionType.slice(1);
  if (CREDENTIAL_EXCEPTIONS.has(name)) return new ProviderStreamError(`Amazon Bedrock refused the gateway's AWS credentials (${name}).`, 'upstream_auth_failed');
  const mapping = MAPPINGS[name];
  const type = mapping?.type === 'rate_limit_error' ? 'rate_limit_error' : mapping?.status === 400 ? 'invalid_request_error' : 'server_error';
  return new ProviderStreamError(`${message} (${name})`, mapping?.code ?? 'upstream_stream_error', type);
}
