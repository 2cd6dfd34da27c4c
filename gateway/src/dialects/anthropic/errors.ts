// The Messages API's error envelope, `{"type":"error","error":{"type","message"},"request_id"}`, with
// Anthropic's statuses, which the Anthropic SDKs raise as their own error classes. The gateway's
// 503 (no upstream available, overloaded) is Anthropic's 529 overloaded_error, which Claude Code and
// the SDKs retry as such.
import type { ApiError } from '../../http/errors.ts';

const TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export interface AnthropicErrorAnswer {
  status: number;
  body: { type: 'error'; error: { type: string; message: string }; request_id: string };
}

export function anthropicError(error: ApiError, requestId: string): AnthropicErrorAnswer {
  const status = error.status === 503 ? 529 : error.status;
  const type = TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  // The param OpenAI's body names separately goes into the message, as Anthropic writes it (`max_tokens: …`).
  const message = error.param && !error.message.startsWith(error.param) ? `${error.param}: ${error.message}` : error.message;
  return { status, body: { type: 'error', error: { type, message }, request_id: requestId } };
}
