// What one request costs the shared store, measured on a real redis-server: the gateway talks to it
// through a TCP relay that notes which way every chunk goes, so a round trip is a turn of the
// conversation (the gateway writes, Redis answers), and Redis's own command statistics count the
// commands. An account with every kind of limit, and a key with lower ones (two scopes), must cost
// one round trip before the answer (the admission) and one after it (settlement and usage count);
// so must a priced request under spend budgets on both (its worst cost reserved, then its cost settled).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, type TestGateway, startTestGateway, upstream } from '../helpers/gateway.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const key = newKey('counted-key', 'counted');
/** The key's own, lower limits: a second scope, with its own window and budget. */
const keyManifest = { ...apiKey(key), spec: { ...apiKey(key).spec, limits: { requestsPerMinute: 50, tokensPerMonth: 500_000 } } };
const LIMITS = { requestsPerMinute: 100, tokensPerMinute: 100_000, concurrentRequests: 4, tokensPerMonth: 1_000_000 };
/** The same limits with spend budgets on the plan and the key, for a priced model. */
const spender = newKey('spender-key', 'spender');
const spenderManifest = { ...apiKey(spender), spec: { ...apiKey(spender).spec, limits: { requestsPerMinute: 50, tokensPerMonth: 500_000, spendPerMonth: '5.00' } } };
const spendingPlan = { ...plan('spending', ['service-test', 'gpt-priced'], LIMITS), spec: { models: ['service-test', 'gpt-priced'], limits: { ...LIMITS, spendPerMonth: '10.00' } } };
const pricedModel = { ...model('gpt-priced', [{ upstream: 'held' }]), spec: { ...model('gpt-priced', [{ upstream: 'held' }]).spec, pricing: { inputPerMillion: '2.00', outputPerMillion: '8.00' } } };

/** A TCP relay to Redis that records the direction of every chunk: 'c' gateway → Redis, 's' back. */
async function startRelay(target: number): Promise<{ port: number; turns: string[]; written: Buffer[]; close(): Promise<void> }> {
  const turns: string[] = [];
  const written: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      turns.push('c');
      written.push(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      turns.push('s');
      client.write(chunk);
    });
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    turns,
    written,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Round trips in a recording: runs of gateway writes, each answered before the next. */
function roundTrips(turns: readonly string[]): number {
  return turns.filter((turn, i) => turn === 'c' && turns[i - 1] !== 'c').length;
}

/** Script calls since the last CONFIG RESETSTAT, by Redis's own count (the commands scripts run are counted apart). */
async function scriptCalls(redis: TestRedis): Promise<number> {
  const stats = await redis.cli('INFO', 'commandstats');
  return ['evalsha', 'eval'].reduce((sum, name) => sum + Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0), 0);
}

/** The commands in what the gateway wrote (RESP arrays of bulk strings), by name. */
function commandsIn(bytes: Buffer): string[] {
  const names: string[] = [];
  let at = 0;
  const line = () => {
    const end = bytes.indexOf('\r\n', at);
    const text = bytes.toString('latin1', at, end);
    at = end + 2;
    return text;
  };
  while (at < bytes.length) {
    const count = Number(line().slice(1));
    for (let i = 0; i < count; i++) {
      const length = Number(line().slice(1));
      if (i === 0) names.push(bytes.toString('latin1', at, at + length).toLowerCase());
      at += length + 2;
    }
  }
  return names;
}

let redis: TestRedis;
let relay: Awaited<ReturnType<typeof startRelay>>;
let fake: FakeUpstream;
let gw: TestGateway;
/** Lets the held stream (below) finish. */
let finishStream = () => {};

beforeAll(async () => {
  [redis, fake] = await Promise.all([startRedis(), startFakeUpstream('held')]);
  relay = await startRelay(redis.port);
  // A stream that sends its first chunk and then waits for the test: the answer is under way.
  fake.behave({
    respond: async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1, model: 'held', usage: null };
      res.write(`data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { role: 'assistant', content: 'one' }, finish_reason: null }] })}\n\n`);
      await new Promise<void>((resolve) => (finishStream = resolve));
      res.write(`data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ ...chunk, choices: [], usage: { prompt_tokens: 11, completion_tokens: 1, total_tokens: 12 } })}\n\ndata: [DONE]\n\n`);
      res.end();
    },
  });
  process.env.TEST_UPSTREAM_KEY = 'sk-round-trips';
  const manifests = [upstream('held', fake.url), model('gpt-held', [{ upstream: 'held' }]), plan('everything', ['service-test', 'gpt-held'], LIMITS), account('counted', 'everything'), keyManifest, pricedModel, spendingPlan, account('spender', 'spending'), spenderManifest];
  gw = await startTestGateway(manifests, {
    // Leases far longer than the test: no renewal runs in the middle of a measurement.
    redis: { url: `redis://127.0.0.1:${relay.port}`, prefix: 'tollgate:', commandTimeoutMs: 5000, leaseMs: 600_000, rateLimits: 'open', budgets: 'closed' },
  });
});

afterAll(async () => {
  await gw?.stop();
  await relay?.close();
  await Promise.all([redis?.close(), fake?.close()]);
});

/** Requests counted for the account in the cluster's usage (the last thing a request writes). */
async function counted(accountName = 'counted'): Promise<number> {
  // The month's usage hash, whatever its hash tag: the one usage key that is not a marker.
  const month = new Date().toISOString().slice(0, 7);
  const key = (await redis.cli('KEYS', `tollgate:*usage*${month}`)).split('\n').find((k) => k && !k.includes('counted'));
  return key ? Number((await redis.cli('HGET', key, `${accountName}|r`)) || 0) : 0;
}

/** What the gateway wrote to Redis since `from` (an index into the relay's recording). */
function commandsSince(from: number): string[] {
  return commandsIn(Buffer.concat(relay.written.slice(from)));
}

describe('round trips to the shared store per request', () => {
  it('admits with one script call before the answer, and settles with one pipelined write after it', async () => {
    // The first request loads the scripts into Redis (EVALSHA, then EVAL once).
    await gw.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Count to three.' }] });
    await waitFor(async () => (await counted()) === 1, 10_000, 'the first request to settle');

    await redis.cli('CONFIG', 'RESETSTAT');
    relay.turns.length = 0;
    const from = relay.written.length;
    const stream = await gw.client(key.key).chat.completions.create({ model: 'gpt-held', messages: [{ role: 'user', content: 'Count to three.' }], stream: true });
    const chunks = stream[Symbol.asyncIterator]();
    expect((await chunks.next()).value?.choices[0].delta.content).toBe('one');
    // The answer is under way: its admission (every limit of both scopes) was the only exchange with Redis.
    expect(roundTrips(relay.turns)).toBe(1);
    expect(commandsSince(from)).toEqual(['evalsha']);
    expect(await scriptCalls(redis)).toBe(1);

    finishStream();
    while (!(await chunks.next()).done);
    await waitFor(async () => (await counted()) === 2, 10_000, 'the request to settle');
    // The settlement (leases, token window, both budgets) and the usage count: one write, one answer.
    expect(roundTrips(relay.turns)).toBe(2);
    expect(commandsSince(from)).toEqual(['evalsha', 'evalsha', 'evalsha']);
    expect(await scriptCalls(redis)).toBe(3);
  });

  it('admits a priced request under spend budgets (plan and key) in the same one script call, and settles its cost in the one write after it', async () => {
    await gw.client(spender.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Count to three.' }] });
    await waitFor(async () => (await counted('spender')) === 1, 10_000, 'the first request to settle');
    const month = new Date().toISOString().slice(0, 7);
    const spendOf = async (scope: string) => Object.fromEntries(chunk((await redis.cli('HGETALL', `tollgate:{spender}:b:${month}:${scope}:spend`)).split('\n').filter(Boolean)));

    await redis.cli('CONFIG', 'RESETSTAT');
    relay.turns.length = 0;
    const from = relay.written.length;
    const stream = await gw.client(spender.key).chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'Count to three.' }], stream: true });
    const chunks = stream[Symbol.asyncIterator]();
    expect((await chunks.next()).value?.choices[0].delta.content).toBe('one');
    expect(roundTrips(relay.turns)).toBe(1);
    expect(commandsSince(from)).toEqual(['evalsha']);
    expect(await scriptCalls(redis)).toBe(1);
    // That one call reserved the worst cost in both spend budgets: the input estimate and the default
    // 1024 output tokens (14 tokens estimated × $2/M + 1024 × $8/M).
    for (const scope of ['account:spender', 'key:spender-key']) expect(await spendOf(scope)).toMatchObject({ reserved: '8220' });

    finishStream();
    while (!(await chunks.next()).done);
    await waitFor(async () => (await counted('spender')) === 2, 10_000, 'the request to settle');
    expect(roundTrips(relay.turns)).toBe(2);
    expect(commandsSince(from)).toEqual(['evalsha', 'evalsha', 'evalsha']);
    expect(await scriptCalls(redis)).toBe(3);
    // Settled to what the upstream reported: 11 × $2/M + 1 × $8/M = 30 micros, nothing left reserved.
    for (const scope of ['account:spender', 'key:spender-key']) expect(await spendOf(scope)).toMatchObject({ reserved: '0', used: '30' });
  });

  it('costs a request without tokens (GET /v1/models) one admission and one write after it', async () => {
    await redis.cli('CONFIG', 'RESETSTAT');
    relay.turns.length = 0;
    const from = relay.written.length;
    const before = await counted();
    const models = await gw.client(key.key).models.list();
    expect(models.data.length).toBeGreaterThan(0);
    await waitFor(async () => (await counted()) === before + 1, 10_000, 'the request to be counted');
    expect(roundTrips(relay.turns)).toBe(2);
    expect(commandsSince(from)).toEqual(['evalsha', 'evalsha', 'evalsha']);
  });
});

/** [a, b, c, d] → [[a, b], [c, d]] (a hash as redis-cli prints it). */
function chunk(items: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i + 1 < items.length; i += 2) pairs.push([items[i], items[i + 1]]);
  return pairs;
}
