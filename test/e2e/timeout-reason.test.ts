// A request stopped by a clock says so: the upstream's time to headers, its pause between chunks, a
// non-stream answer's total time, and a client body that stops arriving all end the request's
// exchange with the abort reason `timeout`, which the access line carries (and metrics and spans read
// from the same exchange). The client gets OpenAI's error shape, or an in-band error event in a
// stream that had started. A timeout the fallback recovers from is not the request's reason.
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { rawExchange, firstResponse } from '../hostile/harness.ts';
import { waitFor } from '../helpers/wait.ts';

process.env.TEST_UPSTREAM_KEY ??= 'sk-test-upstream-timeouts';
const key = newKey('k', 'acme');
let gw: TestGateway;
let slow: FakeUpstream;
let spare: FakeUpstream;

const timed = (name: string, url: string, timeouts: Record<string, number>) => {
  const resource = upstream(name, url);
  return { ...resource, spec: { ...resource.spec, timeouts } };
};

beforeAll(async () => {
  slow = await startFakeUpstream('slow');
  spare = await startFakeUpstream('spare');
  gw = await startTestGateway(
    [
      timed('slow', slow.url, { firstByteMs: 300, idleMs: 300, totalMs: 900 }),
      upstream('spare', spare.url),
      model('m', [{ upstream: 'slow' }]),
      model('m-fallback', [
        { upstream: 'slow', priority: 0 },
        { upstream: 'spare', priority: 1 },
      ]),
      plan('pro', ['m', 'm-fallback', 'service-test']),
      account('acme', 'pro'),
      apiKey(key),
    ],
    { timeouts: { headersMs: 5000, bodyIdleMs: 300, keepAliveMs: 65_000 }, breaker: { threshold: 1000, cooldownMs: 1000 } },
  );
});
afterAll(async () => {
  await gw?.stop();
  await slow?.close();
  await spare?.close();
});
afterEach(() => {
  slow.behave({});
  spare.behave({});
});

/** The access line of the request with this id, once its exchange has ended. */
async function accessLine(requestId: string | null): Promise<Record<string, any>> {
  expect(requestId).toBeTruthy();
  let line: Record<string, any> | undefined;
  await waitFor(() => (line = gw.logs.find((l) => l.requestId === requestId && 'status' in l && 'durationMs' in l)) !== undefined, 10_000, `the access line of ${requestId}`);
  return line!;
}

const hi = (name = 'm', extra: Record<string, unknown> = {}) => ({ model: name, messages: [{ role: 'user', content: 'hi' }], ...extra });

describe('the timeout abort reason', () => {
  it('no headers in time: 504 upstream_timeout, access line abortReason timeout', async () => {
    slow.behave({ hang: true });
    const answer = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: hi() });
    expectErrorShape(answer, 504, 'upstream_timeout');
    const line = await accessLine(answer.headers.get('x-service-request-id'));
    expect(line).toMatchObject({ status: 504, abortReason: 'timeout' });
    expect(line.attempts[0].error).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('a stream that pauses past idleMs: an in-band upstream_idle_timeout event, abortReason timeout', async () => {
    slow.behave({ chunks: 6, chunkIntervalMs: 10, stallAfterChunks: 2 });
    const answer = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: hi('m', { stream: true }) });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"code":"upstream_idle_timeout"');
    const line = await accessLine(answer.headers.get('x-service-request-id'));
    expect(line).toMatchObject({ status: 200, streamError: 'upstream_idle_timeout', abortReason: 'timeout' });
    expect(line.attempts[0].error).toBe('UND_ERR_BODY_TIMEOUT');
  });

  it('a JSON answer that keeps trickling past the total time: 504 upstream_timeout (not a broken answer), abortReason timeout', async () => {
    // A byte every 100 ms: never idle for 300 ms, but never done within the 900 ms total.
    slow.behave({
      respond: (_req, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"chatcmpl-slow","object":"chat.completion","choices":[');
        const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 100);
        res.once('close', () => clearInterval(timer));
      },
    });
    const answer = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: hi() });
    expectErrorShape(answer, 504, 'upstream_timeout');
    const line = await accessLine(answer.headers.get('x-service-request-id'));
    expect(line).toMatchObject({ status: 504, abortReason: 'timeout' });
    expect(line.attempts[0].error).toBe('UND_ERR_TOTAL_TIMEOUT');
  });

  it('a request body that stops arriving: 408 request_timeout, abortReason timeout', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n`;
    const exchange = await rawExchange(gw.port, [head, '{"model":"service-te'], { quietMs: 2000 });
    const answer = firstResponse(exchange.text);
    expect(answer.status).toBe(408);
    expect(answer.json.error.code).toBe('request_timeout');
    const id = /x-service-request-id: (\S+)/i.exec(answer.head)?.[1] ?? null;
    const line = await accessLine(id);
    expect(line).toMatchObject({ status: 408, abortReason: 'timeout' });
  });

  it('metrics name the timeouts: the 408 as request_timeout, cut answers as attempt timeouts', async () => {
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    expect(text).toMatch(/gen_ai_server_request_duration_seconds_count\{[^}]*error_type="request_timeout"[^}]*\} 1/);
    expect(text).toMatch(/gen_ai_server_request_duration_seconds_count\{[^}]*error_type="upstream_timeout"[^}]*\} [1-9]/);
    // Three attempts of this file's requests timed out before they ended: no headers, a stalled
    // stream, a JSON answer past its total. (The fallback case below adds its own later.)
    expect(text).toMatch(/gen_ai_client_operation_duration_seconds_count\{[^}]*error_type="timeout"[^}]*\} 3/);
  });

  it('a timeout the fallback recovers from is not the request’s reason; an answered request has none', async () => {
    slow.behave({ hang: true });
    const answer = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: hi('m-fallback') });
    expect(answer.status).toBe(200);
    const line = await accessLine(answer.headers.get('x-service-request-id'));
    expect(line.attempts.map((a: { error?: string }) => a.error ?? null)).toEqual(['UND_ERR_HEADERS_TIMEOUT', null]);
    expect(line).not.toHaveProperty('abortReason');
  });
});
