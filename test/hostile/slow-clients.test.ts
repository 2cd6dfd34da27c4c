// Clients that are slow, idle, or many: slowloris headers and bodies, idle keep-alive floods, a
// stream nobody reads, random-key floods, spoofed request ids, broken and oversized multipart forms.
// Timeouts are set short here (the defaults are in docs/configuration.md) so the suite stays fast.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { generateKey } from '../../gateway/src/resources/keys.ts';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { waitFor } from '../helpers/wait.ts';
import { expectOpenAiError, firstResponse, MB, rawExchange, registerLogs, registerSecret, scanLogs, withLoopDelay } from './harness.ts';

process.env.HOSTILE_SLOW_UPSTREAM_KEY = registerSecret('sk-hostile-slow-upstream-credential-9d81e2');
const key = newKey('k', 'acme');
registerSecret(key.key);
let gw: TestGateway;
let fake: FakeUpstream;

beforeAll(async () => {
  fake = await startFakeUpstream('slow');
  gw = await startTestGateway(
    [
      upstream('slow', fake.url, 'HOSTILE_SLOW_UPSTREAM_KEY'),
      model('m', [{ upstream: 'slow' }]),
      // One request at a time: a request that kept its slot after a timeout would make the next one a 429.
      plan('pro', ['m', 'service-test'], { concurrentRequests: 1 }),
      account('acme', 'pro'),
      apiKey(key),
    ],
    { timeouts: { headersMs: 1000, bodyIdleMs: 800, keepAliveMs: 65_000 } },
  );
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

async function servesNormally() {
  const answer = await gw.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] });
  expect(answer.choices[0].message.content).toBeTruthy();
}

const head = (length: number | null, extra = '') =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\n${length === null ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n${extra}\r\n`;

describe('slow clients', () => {
  it('slowloris headers: cut off after the headers timeout', async () => {
    const bytes = 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '.split('').concat(Array(150).fill('a'));
    const result = await rawExchange(gw.port, bytes, { gapMs: 20, quietMs: 6000, maxMs: 8000 });
    expect(result.closed).toBe(true);
    expect(result.text).toMatch(/^HTTP\/1\.1 408|^$/);
    expect(result.ms).toBeLessThan(6000);
    await servesNormally();
  });

  it('a body that stops mid-way (declared or chunked): 408 in the error shape, and the concurrency slot is free again', async () => {
    for (const chunks of [[head(200), '{"model":"service-test","mess'], [head(null), '14\r\n{"model":"service-te\r\n']]) {
      const result = await rawExchange(gw.port, chunks, { quietMs: 3000 });
      const answer = firstResponse(result.text);
      expect(answer.status).toBe(408);
      expectOpenAiError(answer.json);
      expect(answer.json.error.code).toBe('request_timeout');
      expect(result.closed).toBe(true);
      expect(result.ms).toBeLessThan(3000);
      await servesNormally();
    }
  });

  it('a multipart upload that stops mid-way: 408 too', async () => {
    const boundary = 'xyz';
    const form = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhello`;
    const result = await rawExchange(gw.port, [`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 5000\r\n\r\n`, form], { quietMs: 3000 });
    const answer = firstResponse(result.text);
    expect(answer.status).toBe(408);
    expectOpenAiError(answer.json);
    await servesNormally();
  });

  it('keep-alive connections are kept longer than client pools keep them idle', async () => {
    const result = await rawExchange(gw.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], { quietMs: 300 });
    expect(result.text).toMatch(/Keep-Alive: timeout=65/i);
  });

  it('an idle keep-alive flood (300 connections) does not stop service', async () => {
    const sockets: Socket[] = [];
    for (let i = 0; i < 300; i++) {
      const socket = connect(gw.port, '127.0.0.1');
      socket.on('error', () => {});
      sockets.push(socket);
    }
    await Promise.all(sockets.map((s) => new Promise((resolve) => s.once('connect', resolve))));
    for (const s of sockets.slice(0, 150)) s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const timing = await withLoopDelay(() => servesNormally());
    expect(timing.ms).toBeLessThan(2000);
    for (const s of sockets) s.destroy();
  });

  it('a client that never reads its stream: backpressure reaches the upstream, memory stays bounded, the gateway serves others', async () => {
    fake.behave({ chunks: 5000, chunkPadding: 4096 });
    const socket = connect(gw.port, '127.0.0.1');
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    socket.write(`${head(Buffer.byteLength(body))}${body}`);
    socket.pause();
    await waitFor(() => fake.blocked, 15_000, 'the upstream to be blocked by backpressure');
    // What the fake has written is what the kernel buffers and the gateway hold: far less than 5000 × 4 KB.
    expect(fake.sent).toBeLessThan(16 * MB);
    socket.destroy();
    await waitFor(() => fake.aborted > 0, 5000, 'the upstream stream to be released');
    fake.behave({});
    await servesNormally();
  });

  it('a random-key flood: every answer a 401 in the error shape, quickly, no key in any log', async () => {
    const keys = Array.from({ length: 300 }, () => registerSecret(generateKey('tg')));
    const timing = await withLoopDelay(async () => {
      for (let i = 0; i < keys.length; i += 50) {
        const answers = await Promise.all(keys.slice(i, i + 50).map((k) => raw(gw, 'POST', '/v1/chat/completions', { key: k, body: { model: 'service-test', messages: [] } })));
        for (const answer of answers) expectErrorShape(answer, 401, 'invalid_api_key');
      }
    });
    // The client side of the flood runs in this process too; the bound is for a request that would block for seconds.
    expect(timing.maxDelayMs).toBeLessThan(1000);
    await servesNormally();
  });
});

describe('request ids', () => {
  it('an id sent by a client that is not a trusted proxy is not used; it is logged apart, sanitised', async () => {
    const spoof = 'victim-request-0001\u0007"}';
    const response = await raw(gw, 'GET', '/v1/models', { key: key.key, headers: { 'x-service-request-id': 'victim-request-0001' } });
    expect(response.headers.get('x-service-request-id')).not.toBe('victim-request-0001');
    expect(response.headers.get('x-service-request-id')).toMatch(/^req_/);
    const line = gw.logs.find((l) => l.requestId === response.headers.get('x-service-request-id'));
    expect(line?.clientRequestId).toBe('victim-request-0001');
    const odd = await rawExchange(gw.port, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Service-Request-Id: ${spoof.replace('\u0007', '')}${'z'.repeat(5000)}\r\n\r\n`]);
    expect(firstResponse(odd.text).status).toBe(200);
    const id = /x-service-request-id: (\S+)/i.exec(odd.text)?.[1];
    await waitFor(() => gw.logs.some((l) => l.requestId === id), 2000, 'the access line');
    const logged = gw.logs.find((l) => l.requestId === id)!.clientRequestId as string;
    expect(logged.length).toBeLessThanOrEqual(128);
    expect(logged).toMatch(/^[A-Za-z0-9._:-]+$/);
  });
});

describe('multipart forms', () => {
  const boundary = 'hostile-boundary';
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const file = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n{"a":1}\r\n`;
  const post = (body: string, type = `multipart/form-data; boundary=${boundary}`) =>
    raw(gw, 'POST', '/v1/files', { key: key.key, body, headers: { 'content-type': type } });

  it('a file plus 9,999 fields, or a file after part 1,000: 400 naming the limit, never silently dropped', async () => {
    const many = Array.from({ length: 9999 }, (_, i) => field(`f${i}`, 'x')).join('');
    const tooMany = await post(`${file}${field('purpose', 'batch')}${many}--${boundary}--\r\n`);
    expect(expectErrorShape(tooMany, 400, 'too_many_parts').message).toContain('1000');
    const late = await post(`${field('purpose', 'batch')}${Array.from({ length: 1000 }, (_, i) => field(`f${i}`, 'x')).join('')}${file}--${boundary}--\r\n`);
    expectErrorShape(late, 400, 'too_many_parts');
    await servesNormally();
  });

  it('broken forms: no boundary, truncated, garbage — 400 in the error shape', async () => {
    expectErrorShape(await post(`${file}--${boundary}--\r\n`, 'multipart/form-data'), 400);
    expectErrorShape(await post(`${field('purpose', 'batch')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc`), 400);
    expectErrorShape(await post('\x00\x01garbage\r\n\r\n'), 400);
    await servesNormally();
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
