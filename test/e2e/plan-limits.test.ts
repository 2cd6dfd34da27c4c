// Plan limits through the public surface: the real gateway on port 0, a clock the tests move (so
// windows slide and months roll over without waiting), raw HTTP for headers and the official SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway, type TestKey } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

/** A clock the test owns; each test moves it forward only. */
function testClock(startIso: string) {
  const clock = { now: Date.parse(startIso), advance: (ms: number) => (clock.now += ms) };
  return clock;
}

function keyWithLimits(k: TestKey, limits: Record<string, number>) {
  const resource = apiKey(k);
  return { ...resource, spec: { ...resource.spec, limits } };
}

const chat = (model = 'service-test', extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user' as const, content: 'Say something short.' }], ...extra });

async function waitUntil(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function expect429(response: Awaited<ReturnType<typeof raw>>, limitWords: RegExp) {
  expectErrorShape(response, 429, 'rate_limit_exceeded');
  expect(response.json.error.type).toBe('rate_limit_error');
  expect(response.json.error.message).toMatch(limitWords);
  const ms = Number(response.headers.get('retry-after-ms'));
  expect(ms).toBeGreaterThan(0);
  expect(Number(response.headers.get('retry-after'))).toBe(Math.ceil(ms / 1000));
  return ms;
}

describe('requests per minute', () => {
  const clock = testClock('2026-11-22T10:00:00.000Z');
  const keys = {
    exact: newKey('exact', 'exact'),
    slide: newKey('slide', 'slide'),
    a: newKey('a', 'shared'),
    b: newKey('b', 'shared'),
    free: newKey('free-key', 'hobbyist'),
  };
  const manifests = (freeRpm: number) => [
    plan('rpm3', ['service-test'], { requestsPerMinute: 3 }),
    plan('rpm2', ['service-test'], { requestsPerMinute: 2 }),
    plan('rpm5', ['service-test'], { requestsPerMinute: 5, tokensPerMinute: 100_000 }),
    plan('free', ['service-test'], { requestsPerMinute: freeRpm }),
    account('exact', 'rpm3'),
    account('slide', 'rpm2'),
    account('shared', 'rpm5'),
    account('hobbyist'),
    apiKey(keys.exact),
    apiKey(keys.slide),
    keyWithLimits(keys.a, { requestsPerMinute: 1 }),
    apiKey(keys.b),
    apiKey(keys.free),
  ];
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway(manifests(2), { clock: () => clock.now });
  });
  afterAll(() => gateway.stop());

  it('admits exactly N, refuses N+1 with the 429 contract, and admits again once the window has slid past the first', async () => {
    const start = clock.now;
    for (const remaining of [2, 1, 0]) {
      const ok = await raw(gateway, 'GET', '/v1/models', { key: keys.exact.key });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(ok.headers.get('x-ratelimit-remaining-requests')).toBe(String(remaining));
      expect(ok.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+ms|[\d.]+s|\d+m[\d.]+s)$/);
    }
    const refused = await raw(gateway, 'GET', '/v1/models', { key: keys.exact.key });
    const waitMs = expect429(refused, /requests per minute \(RPM\): Limit 3, Used 3/);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(waitMs).toBeGreaterThan(59_000);
    expect(waitMs).toBeLessThanOrEqual(60_100);

    clock.now = start + 59_900;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.exact.key })).status).toBe(429);
    clock.now = start + waitMs;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.exact.key })).status).toBe(200);
  });

  it('slides: a request frees its place one window after it was made, not at a minute boundary', async () => {
    const start = clock.now;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key })).status).toBe(200);
    clock.now = start + 30_000;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key })).status).toBe(200);
    const refused = await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key });
    const waitMs = expect429(refused, /Limit 2/);
    expect(waitMs).toBeGreaterThan(29_000);
    expect(waitMs).toBeLessThanOrEqual(30_100);

    clock.now = start + 60_100;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key })).status).toBe(200);
    // The one made at +30 s is still inside the window.
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key })).status).toBe(429);
    clock.now = start + 90_100;
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.slide.key })).status).toBe(200);
  });

  it('a key with a lower limit is held to it while the account limit binds all its keys together', async () => {
    clock.advance(120_000);
    expect((await raw(gateway, 'GET', '/v1/models', { key: keys.a.key })).status).toBe(200);
    expect429(await raw(gateway, 'GET', '/v1/models', { key: keys.a.key }), /API key a on requests per minute/);
    for (let i = 0; i < 4; i++) expect((await raw(gateway, 'GET', '/v1/models', { key: keys.b.key })).status).toBe(200);
    // 1 (key a) + 4 (key b) = the account's 5; the refused request of key a did not count.
    expect429(await raw(gateway, 'GET', '/v1/models', { key: keys.b.key }), /account shared on requests per minute \(RPM\): Limit 5/);
  });

  it('free accounts follow the Plan named "free", and a change to it applies without a restart', async () => {
    clock.advance(120_000);
    for (let i = 0; i < 2; i++) expect((await raw(gateway, 'GET', '/v1/models', { key: keys.free.key })).status).toBe(200);
    expect429(await raw(gateway, 'GET', '/v1/models', { key: keys.free.key }), /account hobbyist.*Limit 2/);
    await gateway.writeManifests(manifests(3));
    const after = await raw(gateway, 'GET', '/v1/models', { key: keys.free.key });
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit-requests')).toBe('3');
  });

  it('every authenticated answer carries the headers: success, SDK calls, 400s, 404s and 429s', async () => {
    clock.advance(120_000);
    const client = gateway.client(keys.b.key);
    const { response } = await client.chat.completions.create(chat()).withResponse();
    for (const name of ['requests', 'tokens']) {
      expect(response.headers.get(`x-ratelimit-limit-${name}`)).toMatch(/^\d+$/);
      expect(response.headers.get(`x-ratelimit-remaining-${name}`)).toMatch(/^\d+$/);
      expect(response.headers.get(`x-ratelimit-reset-${name}`)).toBeTruthy();
    }
    const badRequest = await raw(gateway, 'POST', '/v1/chat/completions', { key: keys.b.key, body: { model: 'service-test' } });
    expectErrorShape(badRequest, 400);
    const unknownUrl = await raw(gateway, 'GET', '/v1/no-such-thing', { key: keys.b.key });
    expectErrorShape(unknownUrl, 404);
    for (const answer of [badRequest, unknownUrl]) {
      expect(answer.headers.get('x-ratelimit-limit-requests')).toBe('5');
      expect(answer.headers.get('x-ratelimit-limit-tokens')).toBe('100000');
    }
  });
});

describe('tokens: reservation and settlement', () => {
  const clock = testClock('2026-11-22T12:00:00.000Z');
  const key = newKey('tok', 'tokens');
  const tight = newKey('tight', 'tight');
  let fake: FakeUpstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    fake = await startFakeUpstream('primary');
    gateway = await startTestGateway(
      [
        upstream('primary', `${fake.url}/v1`),
        model('gpt-x', [{ upstream: 'primary', model: 'upstream-x' }]),
        plan('tpm', ['service-test', 'gpt-x'], { tokensPerMinute: 10_000, concurrentRequests: 1 }),
        plan('tpm-tight', ['service-test', 'gpt-x'], { tokensPerMinute: 1000 }),
        account('tokens', 'tpm'),
        account('tight', 'tpm-tight'),
        apiKey(key),
        apiKey(tight),
      ],
      { clock: () => clock.now },
    );
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  /** Tokens left in the window, as the headers of a request that reserves none report them. */
  async function tokensLeft(k = key.key): Promise<number> {
    const response = await raw(gateway, 'GET', '/v1/models', { key: k });
    expect(response.status).toBe(200);
    return Number(response.headers.get('x-ratelimit-remaining-tokens'));
  }

  it('a JSON answer is settled to its exact usage (service-test)', async () => {
    const before = await tokensLeft();
    const { data, response } = await gateway.client(key.key).chat.completions.create(chat('service-test', { max_tokens: 50 })).withResponse();
    // While it ran, the reservation (input estimate + max_tokens) was held.
    expect(Number(response.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThanOrEqual(before - 50);
    expect(await tokensLeft()).toBe(before - data.usage!.total_tokens);
  });

  it('a stream is settled to the usage of its last chunk', async () => {
    const before = await tokensLeft();
    const stream = await gateway.client(key.key).chat.completions.create({ ...chat('service-test'), stream: true, stream_options: { include_usage: true } });
    let total = 0;
    for await (const chunk of stream) if (chunk.usage) total = chunk.usage.total_tokens;
    expect(total).toBeGreaterThan(0);
    expect(await tokensLeft()).toBe(before - total);
  });

  it("an upstream's JSON and streamed usage is what gets charged, including the usage chunk the client did not ask for", async () => {
    fake.behave({});
    let before = await tokensLeft();
    await gateway.client(key.key).chat.completions.create(chat('gpt-x'));
    expect(await tokensLeft()).toBe(before - 18);

    fake.behave({ chunks: 5 });
    before = await tokensLeft();
    const stream = await gateway.client(key.key).chat.completions.create({ ...chat('gpt-x'), stream: true });
    for await (const chunk of stream) expect(chunk.usage ?? null).toBeNull();
    expect(await tokensLeft()).toBe(before - (11 + 5));
  });

  it('an upstream failure refunds the whole reservation', async () => {
    const before = await tokensLeft();
    for (const status of [500, 400]) {
      fake.behave({ status });
      const failed = await raw(gateway, 'POST', '/v1/chat/completions', { key: key.key, body: chat('gpt-x', { max_tokens: 500 }) });
      expect(failed.status).toBeGreaterThanOrEqual(400);
      expect(await tokensLeft()).toBe(before);
    }
    fake.behave({});
  });

  it('a request that can never fit is a 400 that says so, not an endless 429', async () => {
    const response = await raw(gateway, 'POST', '/v1/chat/completions', { key: key.key, body: chat('service-test', { max_tokens: 20_000 }) });
    expectErrorShape(response, 400, 'tokens_exceed_limit');
    expect(response.json.error.param).toBe('max_tokens');
    expect(response.json.error.message).toMatch(/10000 tokens per minute/);
  });

  it('a reservation held by an open stream makes the next request wait (429 on tokens), and a disconnect settles it', async () => {
    fake.behave({ chunks: 10, stallAfterChunks: 2 });
    const client = gateway.client(tight.key);
    const abort = new AbortController();
    const { data: stream, response } = await client.chat.completions.create({ ...chat('gpt-x'), stream: true, max_tokens: 600 }, { signal: abort.signal }).withResponse();
    const heldRemaining = Number(response.headers.get('x-ratelimit-remaining-tokens'));
    expect(heldRemaining).toBeLessThanOrEqual(400);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();

    const refused = await raw(gateway, 'POST', '/v1/chat/completions', { key: tight.key, body: chat('gpt-x', { max_tokens: 600 }) });
    expect429(refused, /tokens per minute \(TPM\): Limit 1000/);

    const abortedBefore = fake.aborted;
    abort.abort();
    await waitUntil(() => fake.aborted > abortedBefore, 'the upstream saw the abort');
    // No usage came back, and the answer had started: the reservation stands (it may have been billed).
    await waitUntil(async () => (await tokensLeft(tight.key)) === heldRemaining, 'the reservation was settled');
    clock.advance(60_100);
    fake.behave({});
    expect((await raw(gateway, 'POST', '/v1/chat/completions', { key: tight.key, body: chat('gpt-x', { max_tokens: 600 }) })).status).toBe(200);
  });
});

describe('concurrent requests', () => {
  const key = newKey('conc', 'conc');
  let fake: FakeUpstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    fake = await startFakeUpstream('slow');
    gateway = await startTestGateway([
      upstream('slow', `${fake.url}/v1`),
      model('gpt-slow', [{ upstream: 'slow' }]),
      plan('one-at-a-time', ['service-test', 'gpt-slow'], { concurrentRequests: 1 }),
      account('conc', 'one-at-a-time'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  const send = (body: unknown, signal?: AbortSignal) =>
    fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });

  it('counts an open request, refuses the next with 429, and releases on client disconnect', async () => {
    fake.behave({ hang: true });
    const abort = new AbortController();
    const received = fake.requests.length;
    const hanging = send(chat('gpt-slow'), abort.signal).catch(() => null);
    await waitUntil(() => fake.requests.length > received, 'the upstream has the request');

    const refused = await raw(gateway, 'POST', '/v1/chat/completions', { key: key.key, body: chat() });
    expect429(refused, /concurrent requests for account conc: Limit 1, Open 1/);

    abort.abort();
    await hanging;
    await waitUntil(async () => (await raw(gateway, 'GET', '/v1/models', { key: key.key })).status === 200, 'the slot was released');
  });

  it('releases after a JSON answer, a stream, a 400, an upstream failure and a 404', async () => {
    fake.behave({});
    const steps: Array<[string, () => Promise<Response>]> = [
      ['json', () => send(chat())],
      ['stream', () => send(chat('service-test', { stream: true }))],
      ['bad request', () => send({ model: 'service-test' })],
      ['upstream 503', () => (fake.behave({ status: 503 }), send(chat('gpt-slow')))],
      ['unknown model', () => send(chat('nope'))],
    ];
    for (const [name, step] of steps) {
      const response = await step();
      await response.text();
      const next = await raw(gateway, 'GET', '/v1/models', { key: key.key });
      expect(next.status, `after ${name}`).toBe(200);
    }
    fake.behave({});
  });
});

describe('monthly token budget', () => {
  const clock = testClock('2026-11-30T23:58:00.000Z');
  const key = newKey('month', 'monthly');
  const manifests = [plan('budget', ['service-test'], { tokensPerMonth: 300 }), account('monthly', 'budget'), apiKey(key)];
  let gateway: TestGateway;
  let dataDir: string;

  beforeAll(async () => {
    gateway = await startTestGateway(manifests, { clock: () => clock.now });
    dataDir = gateway.dir + '/data';
  });
  afterAll(() => gateway.stop());

  it('refuses once the month is spent, survives a restart, and renews on the 1st (UTC)', async () => {
    let status = 200;
    let refused: Awaited<ReturnType<typeof raw>> | undefined;
    let spent = 0;
    for (let i = 0; i < 20 && status === 200; i++) {
      const response = await raw(gateway, 'POST', '/v1/chat/completions', { key: key.key, body: chat() });
      status = response.status;
      if (status === 200) spent += response.json.usage.total_tokens;
      else refused = response;
    }
    expect(spent).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(300);
    const waitMs = expect429(refused!, /Monthly token budget reached for account monthly: Limit 300/);
    expect(waitMs).toBe(Date.parse('2026-12-01T00:00:00.000Z') - clock.now);

    // A restart on the same data directory remembers what was spent.
    await gateway.close();
    const saved = JSON.parse(await readFile(path.join(dataDir, 'usage', 'monthly-tokens.json'), 'utf8'));
    expect(saved['2026-11']['account:monthly']).toBe(spent);
    const restarted = await startTestGateway(manifests, { clock: () => clock.now, dataDir });
    try {
      expect((await raw(restarted, 'POST', '/v1/chat/completions', { key: key.key, body: chat() })).status).toBe(429);
      // With the budget lowered to exactly what was spent, endpoints priced only afterwards
      // (images, audio) do not start either; requests that cost no tokens still work.
      await restarted.writeManifests([plan('budget', ['service-test'], { tokensPerMonth: spent }), account('monthly', 'budget'), apiKey(key)]);
      const image = await raw(restarted, 'POST', '/v1/images/generations', { key: key.key, body: { model: 'service-test', prompt: 'a red square' } });
      expect429(image, /Monthly token budget/);
      expect((await raw(restarted, 'GET', '/v1/models', { key: key.key })).status).toBe(200);
      clock.now = Date.parse('2026-12-01T00:00:01.000Z');
      expect((await raw(restarted, 'POST', '/v1/chat/completions', { key: key.key, body: chat() })).status).toBe(200);
    } finally {
      await restarted.stop();
    }
  });
});

describe('the official SDK waits as told', () => {
  const key = newKey('sdk', 'sdk');
  let offset = 0;
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway([plan('rpm2', ['service-test'], { requestsPerMinute: 2 }), account('sdk', 'rpm2'), apiKey(key)], { clock: () => Date.now() + offset });
  });
  afterAll(() => gateway.stop());

  it('retries after retry-after-ms and succeeds, with no error surfacing to the application', async () => {
    const client = gateway.client(key.key, { maxRetries: 2 });
    await client.models.list();
    // Pretend the first request was made 59.6 s ago, then fill the window.
    offset = 59_600;
    await client.models.list();
    const refused = await raw(gateway, 'GET', '/v1/models', { key: key.key });
    const waitMs = expect429(refused, /Limit 2/);
    expect(waitMs).toBeLessThan(1000);

    const started = Date.now();
    const logCount = gateway.logs.length;
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toContain('service-test');
    const statuses = gateway.logs.slice(logCount).filter((line) => line.route === '/v1/models').map((line) => line.status);
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(waitMs - 50);
  });
});

describe("an upstream's own 429", () => {
  const key = newKey('up429', 'up429');
  let first: FakeUpstream;
  let second: FakeUpstream;
  let gateway: TestGateway;

  beforeAll(async () => {
    first = await startFakeUpstream('first', { status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '2' } });
    second = await startFakeUpstream('second', { status: 429, headers: { 'retry-after-ms': '2500', 'retry-after': '3' } });
    gateway = await startTestGateway([
      upstream('first', `${first.url}/v1`),
      upstream('second', `${second.url}/v1`),
      model('gpt-busy', [
        { upstream: 'first', priority: 0 },
        { upstream: 'second', priority: 1 },
      ]),
      plan('busy', ['gpt-busy'], { requestsPerMinute: 100 }),
      account('up429', 'busy'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gateway.stop();
    await Promise.all([first.close(), second.close()]);
  });

  it('is relayed with its retry hints once every target has been tried, beside our own headers', async () => {
    const response = await raw(gateway, 'POST', '/v1/chat/completions', { key: key.key, body: chat('gpt-busy') });
    expect(first.requests.length).toBe(1);
    expect(second.requests.length).toBe(1);
    expectErrorShape(response, 429);
    expect(response.headers.get('retry-after-ms')).toBe('2500');
    expect(response.headers.get('retry-after')).toBe('3');
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('100');
  });
});

