import { describe, expect, it } from 'vitest';
import { ProviderStreamError } from '../provider.ts';
import { googleStreamError, translateError } from './errors.ts';

const body = (status: string, code: number, message: string, details: unknown[] = []) => JSON.stringify({ error: { code, message, status, details } });

describe('gemini errors', () => {
  it('keeps the 429 and takes retry-after from RetryInfo', () => {
    const error = translateError(429, {}, body('RESOURCE_EXHAUSTED', 429, 'Quota exceeded', [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12.2s' }]));
    expect(error).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', retryAfter: '13', message: 'Quota exceeded' });
    expect(translateError(429, { 'retry-after': '5' }, body('RESOURCE_EXHAUSTED', 429, 'q')).retryAfter).toBe('5');
  });

  it('reads the array-wrapped form and maps UNAVAILABLE to 503', () => {
    const error = translateError(503, {}, JSON.stringify([{ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }]));
    expect(error).toMatchObject({ status: 503, type: 'server_error', message: 'The model is overloaded.' });
  });

  it('calls a refused credential a 502 the client is not blamed for', () => {
    const expired = translateError(401, {}, body('UNAUTHENTICATED', 401, 'Request had invalid authentication credentials.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ACCESS_TOKEN_EXPIRED' }]));
    expect(expired).toMatchObject({ status: 502, code: 'upstream_auth_failed', credentialRefused: true });
    const badKey = translateError(400, {}, body('INVALID_ARGUMENT', 400, 'API key not valid.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }]));
    expect(badKey).toMatchObject({ status: 502, credentialRefused: true });
  });

  it('maps validation, missing models, context length, and an HTML page', () => {
    expect(translateError(400, {}, body('INVALID_ARGUMENT', 400, 'Please ensure that multiturn requests alternate between user and model.'))).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'invalid_request' });
    expect(translateError(400, {}, body('INVALID_ARGUMENT', 400, 'The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).')).code).toBe('context_length_exceeded');
    expect(translateError(404, {}, body('NOT_FOUND', 404, 'models/x is not found'))).toMatchObject({ status: 404, code: 'model_not_found' });
    expect(translateError(502, {}, '<html>Bad gateway</html>')).toMatchObject({ status: 502, message: 'Gemini answered HTTP 502.' });
  });

  it('turns an error inside the stream into a ProviderStreamError', () => {
    const error = googleStreamError({ code: 503, status: 'UNAVAILABLE', message: 'overloaded' });
    expect(error).toBeInstanceOf(ProviderStreamError);
    expect(error.code).toBe('upstream_unavailable');
  });
});
