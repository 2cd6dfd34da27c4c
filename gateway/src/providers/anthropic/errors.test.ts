import { describe, expect, it } from 'vitest';
import { translateError } from './errors.ts';

const envelope = (type: string, message: string) => JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_1' });

describe('anthropic errors', () => {
  it('turns 529 overloaded into 503 with a Retry-After, keeping Anthropic\'s when given', () => {
    expect(translateError(529, {}, envelope('overloaded_error', 'Overloaded'))).toMatchObject({ status: 503, type: 'server_error', retryAfter: '1' });
    expect(translateError(529, { 'retry-after': '12' }, envelope('overloaded_error', 'Overloaded')).retryAfter).toBe('12');
  });

  it('turns a refused API key into 502 upstream_auth_failed, never a 401', () => {
    const error = translateError(401, {}, envelope('authentication_error', 'invalid x-api-key'));
    expect(error).toMatchObject({ status: 502, code: 'upstream_auth_failed', credentialRefused: true });
  });

  it('keeps retry-after on 429 and maps billing to insufficient_quota', () => {
    expect(translateError(429, { 'retry-after': '30' }, envelope('rate_limit_error', 'slow down'))).toMatchObject({ status: 429, code: 'rate_limit_exceeded', retryAfter: '30', message: 'Anthropic: slow down' });
    expect(translateError(400, {}, envelope('billing_error', 'credit balance too low'))).toMatchObject({ status: 429, type: 'insufficient_quota' });
  });

  it('recognises a prompt that is too long', () => {
    expect(translateError(400, {}, envelope('invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'))).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    expect(translateError(400, {}, envelope('invalid_request_error', 'messages: text content blocks must be non-empty'))).toMatchObject({ status: 400, code: 'invalid_request_error' });
  });

  it('maps the other statuses, and bodies that are not Anthropic\'s', () => {
    expect(translateError(404, {}, envelope('not_found_error', 'model: x')).status).toBe(404);
    expect(translateError(413, {}, envelope('request_too_large', 'big')).status).toBe(413);
    expect(translateError(500, {}, envelope('api_error', 'oops')).status).toBe(500);
    expect(translateError(504, {}, '').status).toBe(504);
    expect(translateError(502, {}, '<html>bad gateway</html>')).toMatchObject({ status: 503, message: 'Anthropic answered HTTP 502.' });
  });
});
