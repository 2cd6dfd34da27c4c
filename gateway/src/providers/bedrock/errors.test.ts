// Which refusals from Bedrock say the session credentials expired (so the chain is asked afresh), as
// AWS words them in the x-amzn-errortype header, the body's __type, or only the message.
import { describe, expect, it } from 'vitest';
import { sessionExpired } from './errors.ts';

const typed = (type: string) => ({ 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.coral.service/` });

describe('sessionExpired', () => {
  it.each([
    ['ExpiredTokenException in the header', typed('ExpiredTokenException'), '{"message":"The security token included in the request is expired"}'],
    ['UnrecognizedClientException (a replaced session token)', typed('UnrecognizedClientException'), '{"message":"The security token included in the request is invalid."}'],
    ['the type only in the body', {}, '{"__type":"com.amazon.coral.service#ExpiredTokenException","message":"expired"}'],
    ['only the words', {}, '{"Message":"The security token included in the request is expired"}'],
    ['the words in a body that is not JSON', {}, 'The security token included in the request is expired'],
  ])('%s: expired', (_what, headers, text) => {
    expect(sessionExpired(headers, text)).toBe(true);
  });

  it.each([
    ['a missing IAM permission', typed('AccessDeniedException'), '{"message":"User is not authorized to perform: bedrock:InvokeModel"}'],
    ['a wrong secret key', typed('InvalidSignatureException'), '{"message":"The request signature we calculated does not match the signature you provided."}'],
    ['a 403 with nothing to go by', {}, ''],
  ])('%s: not expired', (_what, headers, text) => {
    expect(sessionExpired(headers, text)).toBe(false);
  });
});
