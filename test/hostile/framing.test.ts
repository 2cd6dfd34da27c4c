// HTTP framing that ordinary clients never send, over raw sockets: request smuggling (CL+TE, two
// Content-Lengths, a bad chunk size), a lying Content-Length, oversized headers and URLs, control
// characters in headers, path tricks, unknown methods, `Expect: 100-continue` past the limit. Each
// is an OpenAI error answer or a clean close, the gateway serves right after, and no log line holds
// the key that was sent (the parser's errors carry the raw bytes of the request).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectOpenAiError, firstResponse, rawExchange, registerLogs, registerSecret, scanLogs } from './harness.ts';

const key = newKey('k', 'acme');
registerSecret(key.key);
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway([plan('pro', ['service-test']), account('acme', 'pro'), apiKey(key)]);
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
});

const auth = () => `Authorization: Bearer ${key.key}\r\n`;
const body = '{"model":"service-test","messages":[{"role":"user","content":"hi"}]}';

async function servesNormally() {
  const answer = await gw.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] });
  expect(answer.choices[0].message.content).toBeTruthy();
}

/** A 4xx that is either our error body or the parser's bare refusal, and the connection closed. */
function expectRefusedAndClosed(result: { text: string; closed: boolean }, statuses = [400]) {
  const answer = firstResponse(result.text);
  expect(statuses).toContain(answer.status);
  if (answer.json) expectOpenAiError(answer.json);
  expect(result.closed).toBe(true);
}

describe('request smuggling and lying lengths', () => {
  it.each([
    ['Content-Length and Transfer-Encoding', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['two Content-Lengths', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 5\r\nContent-Length: ${body.length}\r\n\r\n${body}`],
    ['an invalid chunk size', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
    ['bytes after a short Content-Length', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 10\r\n\r\n${body}`],
    ['an obfuscated Transfer-Encoding', `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: xchunked\r\n\r\n${body}`],
  ])('%s: refused, closed, nothing smuggled, no key logged', async (_name, request) => {
    const result = await rawExchange(gw.port, [request], { quietMs: 1500 });
    const answer = firstResponse(result.text);
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    // A smuggled second request would have been answered too.
    expect(result.text.match(/(^|\r\n)HTTP\/1\.1 \d{3} /g)!.length).toBe(1);
    await servesNormally();
  });
});

describe('oversized and odd headers', () => {
  it('headers past 16 KB: 431, closed', async () => {
    const result = await rawExchange(gw.port, [`GET /v1/models HTTP/1.1\r\nHost: x\r\n${auth()}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    expectRefusedAndClosed(result, [431]);
    await servesNormally();
  });

  it('a 100 KB URL: refused, closed', async () => {
    const result = await rawExchange(gw.port, [`GET /v1/models?${'q'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n${auth()}\r\n`]);
    expectRefusedAndClosed(result, [414, 431]);
    await servesNormally();
  });

  it('control characters in a header: 400, closed', async () => {
    const result = await rawExchange(gw.port, [`GET /v1/models HTTP/1.1\r\nHost: x\r\n${auth()}X-Evil: a\u0001\u0000b\r\n\r\n`]);
    expectRefusedAndClosed(result);
    await servesNormally();
  });
});

describe('paths and methods', () => {
  it.each([['/V1/models'], ['/v1/Models'], ['/V1/chat/completions'], ['/v1/../v1/models'], ['/%2e%2e/v1/models'], ['/v1/%2e%2e/v1/models'], ['//v1/models'], ['/v1//models'], ['/healthz/../v1/models'], ['/v1/models%00'], ['/v1/models/..%2f..%2fetc%2fpasswd']])(
    '%s without a key: never a 200 with data, never a 500',
    async (path) => {
      const result = await rawExchange(gw.port, [`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`]);
      const answer = firstResponse(result.text);
      expect([400, 401, 404]).toContain(answer.status);
      if (answer.json) expectOpenAiError(answer.json);
    },
  );

  it.each([['TRACE'], ['PROPFIND'], ['PATCH']])('%s on an API path: 405 invalid_request_error', async (method) => {
    const result = await rawExchange(gw.port, [`${method} /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 0\r\n\r\n`]);
    const answer = firstResponse(result.text);
    expect(answer.status).toBe(405);
    expectOpenAiError(answer.json);
    expect(answer.json.error.type).toBe('invalid_request_error');
  });

  it('Expect: 100-continue with a Content-Length past the limit: 413 without 100 Continue first', async () => {
    const result = await rawExchange(gw.port, [`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${60 * 1024 * 1024}\r\n\r\n`], { quietMs: 1500 });
    expect(result.text).not.toMatch(/100 Continue/);
    expect(firstResponse(result.text).status).toBe(413);
    expectOpenAiError(firstResponse(result.text).json);
  });

  it('Expect: 100-continue within the limit: 100 Continue, then the answer', async () => {
    const result = await rawExchange(gw.port, [`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`, body], { gapMs: 200, quietMs: 1000 });
    expect(result.text).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(result.text).toMatch(/HTTP\/1\.1 200 OK/);
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
