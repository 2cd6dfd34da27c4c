// Google's error answers (`{"error":{code,message,status,details}}`, sometimes wrapped in an array)
// as OpenAI's. The client gets the status its SDK retries on (429, 503), the wait Google asked for
// (RetryInfo's retryDelay) as retry-after, and a refused gateway credential as 502
// `upstream_auth_failed` — never a 401 it would blame on its own key.
import { ProviderStreamError, type TranslatedError } from '../provider.ts';

interface GoogleError {
  code?: number;
  message?: string;
  status?: string;
  details?: { '@type'?: string; reason?: string; retryDelay?: string }[];
}

/** Reasons (ErrorInfo) that mean the gateway's own credential was refused, whatever the status. */
const CREDENTIAL_REASONS = new Set(['API_KEY_INVALID', 'API_KEY_EXPIRED', 'ACCESS_TOKEN_EXPIRED', 'ACCESS_TOKEN_TYPE_UNSUPPORTED', 'CREDENTIALS_MISSING', 'SERVICE_DISABLED', 'API_KEY_SERVICE_BLOCKED', 'IAM_PERMISSION_DENIED']);

function parse(text: string): GoogleError {
  try {
    let json: unknown = JSON.parse(text);
    if (Array.isArray(json)) json = json[0];
    const error = (json as { error?: unknown } | null)?.error;
    if (typeof error === 'object' && error !== null) return error as GoogleError;
  } catch {
    // Not Google's JSON (a proxy's HTML page): the status alone decides.
  }
  return {};
}

/** RetryInfo's `retryDelay` ("12s", "1.5s") as whole seconds, rounded up. */
function retryDelay(error: GoogleError): string | undefined {
  const info = error.details?.find((detail) => detail['@type']?.endsWith('google.rpc.RetryInfo'));
  const match = info?.retryDelay ? /^(\d+(?:\.\d+)?)s$/.exec(info.retryDelay) : null;
  return match ? String(Math.max(1, Math.ceil(Number(match[1])))) : undefined;
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function translateError(status: number, headers: Record<string, string | string[] | undefined>, text: string): TranslatedError {
  const error = parse(text);
  const message = error.message || `Gemini answered HTTP ${status}.`;
  const reasons = (error.details ?? []).map((detail) => detail.reason).filter((reason): reason is string => typeof reason === 'string');
  const retryAfter = retryDelay(error) ?? header(headers, 'retry-after');
  const base = { message, param: null, ...(retryAfter ? { retryAfter } : {}) };

  if (status === 401 || status === 403 || error.status === 'UNAUTHENTICATED' || reasons.some((reason) => CREDENTIAL_REASONS.has(reason))) {
    return { ...base, status: 502, type: 'server_error', code: 'upstream_auth_failed', message: `The provider refused the gateway's credential: ${message}`, credentialRefused: true };
  }
  switch (status) {
    case 400:
      return { ...base, status: 400, type: 'invalid_request_error', code: /exceeds the maximum number of tokens|input token count/i.test(message) ? 'context_length_exceeded' : 'invalid_request' };
    case 404:
      return { ...base, status: 404, type: 'not_found_error', code: 'model_not_found' };
    case 413:
      return { ...base, status: 413, type: 'invalid_request_error', code: 'request_too_large' };
    case 429:
      return { ...base, status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' };
    case 500:
      return { ...base, status: 500, type: 'server_error', code: 'upstream_error' };
    case 503:
      return { ...base, status: 503, type: 'server_error', code: 'upstream_unavailable' };
    case 504:
      return { ...base, status: 504, type: 'server_error', code: 'upstream_timeout' };
    default:
      return status >= 500 || status < 400
        ? { ...base, status: 502, type: 'server_error', code: 'upstream_error' }
        : { ...base, status: 400, type: 'invalid_request_error', code: 'invalid_request' };
  }
}

/** An error object Gemini put in its stream, as the error frame the client's SDK raises. */
export function googleStreamError(raw: unknown): ProviderStreamError {
  const error = (raw ?? {}) as GoogleError;
  const code = error.status === 'RESOURCE_EXHAUSTED' ? 'rate_limit_exceeded' : error.status === 'UNAVAILABLE' ? 'upstream_unavailable' : 'upstream_stream_error';
  return new ProviderStreamError(`Gemini stopped the stream: ${error.message ?? error.status ?? 'unknown error'}`, code, code === 'rate_limit_exceeded' ? 'rate_limit_error' : 'server_error');
}
