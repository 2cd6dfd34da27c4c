// Three gateway processes sharing one real redis-server (shared mode, TOLLGATE_REDIS_URL): limits
// are exact across them however requests are spread, a replica killed with SIGKILL gives its slots
// and reservations back within the lease time, and Redis going away and coming back follows the
// documented failure behaviour without crashing anything.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, raw, toYaml, upstream } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const LEASE_MS = 1500;
const keys = {
  rpm: newKey('rpm-key', 'rpm-acct'),
  budget: newKey('budget-key', 'budget-acct'),
  stall: newKey('stall-key', 'stall-acct'),
  open: newKey('open-key', 'open-acct'),
  state: newKey('state-key', 'state-acct'),
  other: newKey('other-key', 'other-acct'),
};
const BUDGET = 6000;

let redis: TestRedis;
let fake: FakeUpstream;
let dir: string;
let gateways: GatewayProcess[] = [];

async function startReplica(configFile: string): Promise<GatewayProcess> {
  return startGatewayProcess(configFile, {
    TOLLGATE_REDIS_URL: redis.url,
    TOLLGATE_REDIS_LEASE_MS: String(LEASE_MS),
    // The machine running the suite is shared and can be saturated; these tests are about
    // exactness, the timeout's behaviour has its own tests.
    TOLLGATE_REDIS_TIMEOUT_MS: '3000',
    TEST_UPSTREAM_KEY: 'sk-upstream-secret',
  });
}

function client(gateway: GatewayProcess, key: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
}

beforeAll(async () => {
  [redis, fake] = await Promise.all([startRedis(), startFakeUpstream('slow')]);
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-replicas-'));
  const configFile = path.join(dir, 'tollgate.yaml');
  await writeFile(
    configFile,
    toYaml([
      { ...upstream('slow', fake.url), spec: { ...upstream('slow', fake.url).spec, files: true } },
      model('gpt-slow', [{ upstream: 'slow' }]),
      plan('rpm30', ['service-test'], { requestsPerMinute: 30 }),
      plan('budget', ['service-test'], { tokensPerMonth: BUDGET }),
      plan('stall', ['gpt-slow'], { concurrentRequests: 2, tokensPerMonth: 10_000 }),
      plan('open', ['service-test'], { requestsPerMinute: 5, tokensPerMonth: 1_000_000 }),
      account('rpm-acct', 'rpm30'),
      account('budget-acct', 'budget'),
      account('stall-acct', 'stall'),
      account('open-acct', 'open'),
      plan('state', ['service-test', 'gpt-slow']),
      account('state-acct', 'state'),
      account('other-acct', 'state'),
      ...Object.values(keys).map(apiKey),
    ]),
  );
  gateways = await Promise.all([0, 1, 2].map(() => startReplica(configFile)));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.kill('SIGKILL')));
  await Promise.all([redis?.close(), fake?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('three replicas, one Redis', () => {
  it('admits exactly requestsPerMinute across the replicas, however the requests are spread', async () => {
    // 90 requests at once, 30 to each replica in a shuffled order.
    const order = Array.from({ length: 90 }, (_, i) => i % 3).sort(() => Math.random() - 0.5);
    const answers = await Promise.all(order.map((i) => raw(gateways[i], 'GET', '/v1/models', { key: keys.rpm.key })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(30);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.every((a) => a.status === 429 && a.json.error.code === 'rate_limit_exceeded')).toBe(true);
    // Every replica refuses now, including those that admitted nothing of the last burst.
    for (const gateway of gateways) expect((await raw(gateway, 'GET', '/v1/models', { key: keys.rpm.key })).status).toBe(429);
  });

  it('never exceeds tokensPerMonth with 50 concurrent streams spread over the replicas', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        try {
          const stream = await client(gateways[i % 3], keys.budget.key).chat.completions.create({
            model: 'service-test',
            messages: [{ role: 'user', content: `Tell me a story number ${i}.` }],
            max_tokens: 200,
            stream: true,
            stream_options: { include_usage: true },
          });
          let used = 0;
          for await (const chunk of stream) if (chunk.usage) used = chunk.usage.total_tokens;
          return { ok: true as const, used };
        } catch (error) {
          return { ok: false as const, status: (error as { status?: number }).status };
        }
      }),
    );
    const admitted = results.filter((r) => r.ok);
    const spent = admitted.reduce((sum, r) => sum + r.used, 0);
    expect(admitted.length).toBeGreaterThan(0);
    expect(results.filter((r) => !r.ok).map((r) => r.status)).toEqual(results.filter((r) => !r.ok).map(() => 429));
    expect(spent).toBeLessThanOrEqual(BUDGET);
    // What Redis holds is exactly what the streams reported: settled to actual usage, nothing left reserved.
    const month = new Date().toISOString().slice(0, 7);
    await waitFor(async () => (await redis.cli('HGET', `tollgate:{budget-acct}:b:${month}:account:budget-acct`, 'reserved')) === '0', 5000, 'every reservation settled');
    expect(Number(await redis.cli('HGET', `tollgate:{budget-acct}:b:${month}:account:budget-acct`, 'used'))).toBe(spent);
  });

  it('gives back the slots and reservations of a replica killed mid-stream within the lease time', async () => {
    fake.behave({ chunks: 5, stallAfterChunks: 2 });
    const victim = await startReplica(path.join(dir, 'tollgate.yaml'));
    const held: Array<Promise<unknown>> = [];
    for (let i = 0; i < 2; i++) {
      const stream = await client(victim, keys.stall.key).chat.completions.create({ model: 'gpt-slow', messages: [{ role: 'user', content: 'hold' }], max_tokens: 4000, stream: true });
      const iterator = stream[Symbol.asyncIterator]();
      await iterator.next(); // the first chunk arrived: the stream is running, its slot and reservation held
      held.push(iterator.next().catch(() => null));
    }
    const full = await raw(gateways[0], 'POST', '/v1/chat/completions', { key: keys.stall.key, body: { model: 'gpt-slow', messages: [{ role: 'user', content: 'x' }], max_tokens: 10 } });
    expect(full.status).toBe(429);
    expect(full.json.error.message).toMatch(/concurrent/);
    // 8000 of the 10,000 tokens are reserved: a request asking 4000 more does not fit.
    fake.behave({});
    const tooMuch = await raw(gateways[1], 'POST', '/v1/chat/completions', { key: keys.stall.key, body: { model: 'gpt-slow', messages: [{ role: 'user', content: 'x' }], max_tokens: 4000 } });
    expect(tooMuch.status).toBe(429);

    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    await Promise.all(held);
    await waitFor(
      async () => (await raw(gateways[2], 'POST', '/v1/chat/completions', { key: keys.stall.key, body: { model: 'gpt-slow', messages: [{ role: 'user', content: 'x' }], max_tokens: 4000 } })).status === 200,
      LEASE_MS * 4,
      'the dead replica\'s slots and reservations to expire',
    );
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 3);
  });

  it('resolves stored responses, upstream file ids and image URLs on every replica, and counts usage once for the cluster', async () => {
    const [a, b, c] = gateways.map((g) => client(g, keys.state.key));
    const first = await a.responses.create({ model: 'service-test', input: 'Remember the number 42.', store: true });
    const second = await b.responses.create({ model: 'service-test', input: 'Which number?', previous_response_id: first.id });
    expect(second.status).toBe('completed');
    expect((await c.responses.retrieve(first.id)).id).toBe(first.id);
    // Another account's id is unknown everywhere.
    const foreign = await raw(gateways[2], 'GET', `/v1/responses/${first.id}`, { key: keys.other.key });
    expect(foreign.status).toBe(404);

    fake.behave({});
    const uploaded = await a.files.create({ file: new File(['{"a":1}\n'], 'data.jsonl'), purpose: 'batch' });
    for (const replica of [b, c]) expect((await replica.files.retrieve(uploaded.id)).id).toBe(uploaded.id);
    expect((await raw(gateways[1], 'GET', `/v1/files/${uploaded.id}`, { key: keys.other.key })).status).toBe(404);

    const image = await a.images.generate({ model: 'service-test', prompt: 'a red square', response_format: 'url', size: '256x256' });
    const imagePath = new URL(image.data![0].url!).pathname;
    const served = await fetch(`${gateways[2].url}${imagePath}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');

    // Every request above counted once, in one place, whichever replica served it.
    const month = new Date().toISOString().slice(0, 7);
    await waitFor(async () => Number(await redis.cli('HGET', `tollgate:{usage}:${month}`, 'state-acct|r')) >= 7, 5000, 'the usage counts');
    expect(Number(await redis.cli('HGET', `tollgate:{usage}:${month}`, 'state-acct|i'))).toBeGreaterThan(0);
    // GET /usage (metrics port) answers the cluster's totals on any replica: the same for all three.
    const reports = await Promise.all(gateways.map(async (g) => (await fetch(`${g.metricsURL}/usage`)).json()));
    for (const report of reports) {
      expect(report).toMatchObject({ scope: 'cluster', month });
      expect(report.accounts['state-acct']).toEqual(reports[0].accounts['state-acct']);
    }
    expect(reports[0].accounts['state-acct'].requests).toBeGreaterThanOrEqual(7);
  });

  it('follows the failure policy while Redis is stopped mid-load, and recovers after its restart', async () => {
    const burst = () => Promise.all(Array.from({ length: 9 }, (_, i) => raw(gateways[i % 3], 'POST', '/v1/chat/completions', { key: keys.open.key, body: { model: 'service-test', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 } })));
    const before = await burst();
    expect(before.filter((a) => a.status === 200)).toHaveLength(5);

    await redis.stop();
    const during = await burst();
    // Budgets fail closed (503, with a retry hint); no request hangs and no replica crashes.
    expect(during.every((a) => a.status === 503 && a.json.error.code === 'limits_unavailable')).toBe(true);
    expect(during[0].headers.get('retry-after-ms')).toBeTruthy();
    // Requests that need no budget are still served: rate limits fail open.
    const models = await Promise.all(gateways.map((g) => raw(g, 'GET', '/v1/models', { key: keys.open.key })));
    expect(models.every((a) => a.status === 200)).toBe(true);
    for (const gateway of gateways) {
      expect((await raw(gateway, 'GET', '/readyz')).status).toBe(200);
      expect(gateway.child.exitCode).toBeNull();
      expect(gateway.logs.some((l) => l.msg === 'shared store degraded: limits fall back to their configured failure mode')).toBe(true);
    }

    await redis.start();
    await waitFor(() => gateways.every((g) => g.logs.some((l) => l.msg === 'shared store recovered')), 15_000, 'every replica to reconnect');
    // Redis lost its data: a fresh window, enforced exactly again across the replicas.
    const after = await burst();
    expect(after.filter((a) => a.status === 200)).toHaveLength(5);
  });
});
