// The one exception type of the data plane. Everything a client can see as an error is an ApiError
// with a stable string code; the error middleware renders it as OpenAI's
// {"error":{message,type,param,code}} body, which is what the official SDKs parse.

export type ErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error' | 'rate_limit_error' | 'server_error' | 'insufficient_quota';

export interface ApiErrorOptions {
  type?: ErrorType;
  param?: string | null;
  headers?: Record<string, string>;
  /** Which check refused the request, from a fixed list (auth reason, limit name): a metric label, never shown to clients. */
  reason?: string;
  /** The request ends because a clock ran out (body idle, upstream time): its exchange records the reason `timeout`. */
  timedOut?: boolean;
}

/** Longest message and param an error answer carries: messages quote client values, which may be huge. */
const MAX_MESSAGE = 1024;
const MAX_PARAM = 256;

/** A reflected text cut to `max` characters, marking what was left out. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 40)}… (${text.length - max + 40} more characters)`;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly reason: string | undefined;
  readonly timedOut: boolean;

  constructor(status: number, code: string, message: string, options: ApiErrorOptions = {}) {
    super(clip(message, MAX_MESSAGE));
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.type = options.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
    this.param = options.param == null ? null : clip(options.param, MAX_PARAM);
    this.headers = options.headers ?? {};
    this.reason = options.reason;
    this.timedOut = options.timedOut ?? false;
  }

  toBody() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** 400 for a request the client must fix; `param` names the offending field as OpenAI does. */
export function invalidRequest(message: string, param: string | null = null, code = 'invalid_request'): ApiError {
  return new ApiError(400, code, message, { param });
}

export function missingParam(param: string): ApiError {
  return new ApiError(400, 'missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
}

export function invalidType(param: string, expected: string): ApiError {
  return new ApiError(400, 'invalid_type', `Invalid type for '${param}': expected ${expected}.`, { param });
}

export function unknownParam(param: string): ApiError {
  return new ApiError(400, 'unknown_parameter', `Unrecognized request argument supplied: ${param}`, { param });
}

export function invalidValue(param: string, message: string): ApiError {
  return new ApiError(400, 'invalid_value', message, { param });
}

export function invalidApiKey(message = 'Incorrect API key provided.', reason = 'unknown'): ApiError {
  // OpenAI itself answers 401 with type invalid_request_error and code invalid_api_key.
  return new ApiError(401, 'invalid_api_key', message, { type: 'invalid_request_error', reason });
}

export function notFound(message: string, param: string | null = null, code = 'not_found'): ApiError {
  return new ApiError(404, code, message, { param, type: 'invalid_request_error' });
}

export function payloadTooLarge(limitBytes: number): ApiError {
  return new ApiError(413, 'request_too_large', `Request body exceeds the limit of ${Math.round(limitBytes / 1024 / 1024)} MB.`, { type: 'invalid_request_error' });
}
