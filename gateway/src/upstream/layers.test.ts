// The upstream call layers and the fallback over them, against undici's MockAgent (a mock
// dispatcher) and, for a stalled body, a real local server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { MockAgent, Pool, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Upstream } from '@tollgate/crds';
import { Exchanges } from '../exchange/exchanges.ts';
import { Breakers } from './breaker.ts';
import { compose, UpstreamAbort, type CallUpstream, type UpstreamCall } from './call.ts';
import { Credentials } from './credentials.ts';
import { dispatchOn } from './dispatch.ts';
import { firstAnswer } from './fallback.ts';
import type { Attempt } from './targets.ts';
import { withBreaker } from './with-breaker.ts';
import { withCredentials } from './with-credentials.ts';
import { withTimeouts } from './with-timeouts.ts';

const quiet = pino({}, new Writable({ write: (_c, _e, done) => done() }));
const exchange = () => new Exchanges(quiet).begin('req_test', 'POST', '/v1/chat/completions');

function upstreamAt(name: string, baseURL: string, timeouts: Record<string, number> = {}): Upstream {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name }, spec: { baseURL, credentials: { env: 'LAYER_KEY' }, timeouts } } as unknown as Upstream;
}
const attemptOn = (upstream: Upstream, model = 'up-model'): Attempt => ({ target: { upstream: upstream.metadata.name }, upstream, upstreamModel: model });
const chatRequest = () => ({ endpoint: '/chat/completions', method: 'POST', json: { model: 'public', messages: [] } });

function callOf(ex: ReturnType<typeof exchange>, attempt: Attempt): UpstreamCall {
  return { exchange: ex, attempt, request: chatRequest(), record: ex.startAttempt(attempt.upstream.metadata.name, attempt.upstreamModel, null), headers: {}, aborts: new UpstreamAbort(ex) };
}

const credentials = new Credentials({ LAYER_KEY: 'sk-layer-secret' });
let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

function mockAgent(): MockAgent {
  agent = new MockAgent();
  agent.disableNetConnect();
  return agent;
}

function layered(breakers: Breakers, dispatcherFor: (u: Upstream) => Dispatcher): CallUpstream {
  return compose(withBreaker(breakers), withCredentials(credentials), withTimeouts())(dispatchOn(dispatcherFor));
}

describe('withCredentials', () => {
  it('sends the gateway credential and the target model, never without one', async () => {
    const mock = mockAgent();
    let seen: { auth?: string; body?: string } = {};
    mock.get('http://a.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(200, (options) => {
      seen = { auth: (options.headers as Record<string, string>).authorization, body: String(options.body) };
      return { ok: true };
    });
    const call = compose(withCredentials(credentials))(dispatchOn(() => mock.get('http://a.test')));
    const outcome = await call(callOf(exchange(), attemptOn(upstreamAt('a', 'http://a.test/v1'))));
    expect(outcome.kind).toBe('answered');
    expect(seen.auth).toBe('Bearer sk-layer-secret');
    expect(JSON.parse(seen.body!).model).toBe('up-model');
    const missing = compose(withCredentials(new Credentials({})))(dispatchOn(() => mock.get('http://a.test')));
    expect(await missing(callOf(exchange(), attemptOn(upstreamAt('a', 'http://a.test/v1'))))).toEqual({ kind: 'skipped', why: 'missing_credentials' });
  });
});

describe('withBreaker', () => {
  it('a half-open probe is released when a later layer throws (a form that cannot be rebuilt)', async () => {
    const breakers = new Breakers({ threshold: 1, cooldownMs: 0 });
    breakers.failure('a');
    const failing: CallUpstream = async () => {
      throw new Error('the spooled file is gone');
    };
    const call = withBreaker(breakers)(failing);
    await expect(call(callOf(exchange(), attemptOn(upstreamAt('a', 'http://a.test/v1'))))).rejects.toThrow('spooled');
    // Still half-open, and the probe slot is free again: the next request may probe.
    expect(breakers.tryAcquire('a')).toBe(true);
  });

  it('a 401 releases the probe without a verdict; a 503 re-opens; a 200 closes', async () => {
    const mock = mockAgent();
    const pool = mock.get('http://a.test');
    const breakers = new Breakers({ threshold: 1, cooldownMs: 0 });
    const call = layered(breakers, () => pool);
    const up = upstreamAt('a', 'http://a.test/v1');
    breakers.failure('a');
    pool.intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(401, { error: { message: 'bad key' } });
    const denied = await call(callOf(exchange(), attemptOn(up)));
    expect(denied.kind === 'answered' && denied.response.statusCode).toBe(401);
    if (denied.kind === 'answered') await denied.response.body.dump();
    expect(breakers.tryAcquire('a')).toBe(true);
    breakers.release('a');
    pool.intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(200, { ok: true });
    const ok = await call(callOf(exchange(), attemptOn(up)));
    if (ok.kind === 'answered') await ok.response.body.dump();
    // Closed: any number of requests may go.
    expect([breakers.tryAcquire('a'), breakers.tryAcquire('a')]).toEqual([true, true]);
  });
});

describe('withTimeouts', () => {
  it('the total bounds an answer that is not a stream, as a timeout before the headers', async () => {
    const mock = mockAgent();
    mock.get('http://a.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(200, { ok: true }).delay(1000);
    const call = compose(withTimeouts())(dispatchOn(() => mock.get('http://a.test')));
    const outcome = await call(callOf(exchange(), attemptOn(upstreamAt('a', 'http://a.test/v1', { totalMs: 100 }))));
    expect(outcome).toEqual({ kind: 'failed', code: 'UND_ERR_HEADERS_TIMEOUT' });
  });
});

describe('firstAnswer (fallback before the first byte)', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('a 503 with an error body far over 64 KB falls back to the next target', async () => {
    const mock = mockAgent();
    mock.get('http://a.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(503, 'x'.repeat(300_000), { headers: { 'content-type': 'text/plain' } });
    mock.get('http://b.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(200, { answer: 'from b' }, { headers: { 'content-type': 'application/json' } });
    const breakers = new Breakers();
    const ex = exchange();
    const a = upstreamAt('a', 'http://a.test/v1');
    const b = upstreamAt('b', 'http://b.test/v1');
    const answer = await firstAnswer(ex, layered(breakers, (u) => mock.get(u.spec.baseURL!.replace('/v1', ''))), breakers, [attemptOn(a), attemptOn(b)], chatRequest(), {}, "'public'");
    expect(answer?.attempt.upstream.metadata.name).toBe('b');
    expect(await answer!.response.body.json()).toEqual({ answer: 'from b' });
    expect(ex.attempts.map((r) => [r.upstream, r.status, r.outcome, r.error])).toEqual([
      ['a', 503, 'failed', 'upstream_503'],
      ['b', 200, 'pending', null],
    ]);
    expect(ex.upstream).toBe('b');
  });

  it('a 429 whose error body stalls falls back too, and the half-open probe is not left taken', async () => {
    server = createServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.write('{"error":{"message":"slow down"');
      // …and nothing more: the body stalls.
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const stalling = upstreamAt('stall', `${url}/v1`, { idleMs: 200 });
    const mock = mockAgent();
    mock.get('http://b.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(200, { answer: 'from b' }, { headers: { 'content-type': 'application/json' } });
    const pool = new Pool(url);
    const breakers = new Breakers({ threshold: 1, cooldownMs: 0 });
    breakers.failure('stall');
    const ex = exchange();
    try {
      const call = layered(breakers, (u) => (u.metadata.name === 'stall' ? pool : mock.get('http://b.test')));
      const answer = await firstAnswer(ex, call, breakers, [attemptOn(stalling), attemptOn(upstreamAt('b', 'http://b.test/v1'))], chatRequest(), {}, "'public'");
      expect(answer?.attempt.upstream.metadata.name).toBe('b');
      await answer!.response.body.dump();
      expect(ex.attempts[0]).toMatchObject({ upstream: 'stall', status: 429, outcome: 'failed' });
      // The probe got its verdict (a failure): with a zero cooldown the next request may probe again.
      expect(breakers.tryAcquire('stall')).toBe(true);
    } finally {
      await pool.destroy();
    }
  });

  it('a 401 is the gateway credential refused: 502, no fallback, probe released', async () => {
    const mock = mockAgent();
    mock.get('http://a.test').intercept({ path: '/v1/chat/completions', method: 'POST' }).reply(401, 'y'.repeat(200_000));
    const breakers = new Breakers({ threshold: 1, cooldownMs: 0 });
    breakers.failure('a');
    const a = upstreamAt('a', 'http://a.test/v1');
    await expect(firstAnswer(exchange(), layered(breakers, () => mock.get('http://a.test')), breakers, [attemptOn(a), attemptOn(upstreamAt('b', 'http://b.test/v1'))], chatRequest(), {}, "'public'")).rejects.toMatchObject({ status: 502, code: 'upstream_auth_failed' });
    expect(breakers.tryAcquire('a')).toBe(true);
  });
});
