// A spend budget across three gateway processes sharing one real redis-server: 50 requests at once,
// spread over the replicas, against a budget of $1.00 never spend more than $1.00, whatever mix of
// explicit and default output limits they carry; what Redis holds afterwards is exactly what was
// charged, and GET /usage (scope cluster) says so on every replica.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, model, newKey, toYaml, upstream } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const key = newKey('budget-key', 'budget-acct');
let redis: TestRedis;
let fake: FakeUpstream;
let dir: string;
let gateways: GatewayProcess[] = [];

beforeAll(async () => {
  // Each answer takes a moment, so that the 50 requests are all in flight together; the upstream
  // would write 5000 tokens and stops at the request's limit, as a real one does.
  [redis, fake] = await Promise.all([startRedis(), startFakeUpstream('up', { delayMs: 100, usage: { prompt_tokens: 12, completion_tokens: 5000, total_tokens: 5012 } })]);
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-spend-replicas-'));
  const configFile = path.join(dir, 'tollgate.yaml');
  const priced = model('gpt-priced', [{ upstream: 'up' }]);
  await writeFile(
    configFile,
    toYaml([
      upstream('up', fake.url),
      { ...priced, spec: { ...priced.spec, pricing: { inputPerMillion: '2.50', outputPerMillion: '100.00' } } },
      { apiVersion: API, kind: 'Plan', metadata: { name: 'dollar' }, spec: { models: ['gpt-priced'], limits: { spendPerMonth: '1.00' } } },
      account('budget-acct', 'dollar'),
      apiKey(key),
    ]),
  );
  gateways = await Promise.all([0, 1, 2].map(() => startGatewayProcess(configFile, { TOLLGATE_REDIS_URL: redis.url, TOLLGATE_REDIS_TIMEOUT_MS: '3000', TEST_UPSTREAM_KEY: 'sk-upstream-secret' })));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.kill('SIGKILL')));
  await Promise.all([redis?.close(), fake?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a $1.00 budget, three replicas, one Redis', () => {
  it('never spends more than $1.00 with 50 concurrent requests', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        // SDK retries on: a refusal must not be retried (x-should-retry: false).
        const client = new OpenAI({ apiKey: key.key, baseURL: `${gateways[i % 3].url}/v1`, maxRetries: 2 });
        try {
          // Half set an output limit ($0.05 of output), half leave it to the gateway (1024 tokens reserved, fitted at the end).
          const answer = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: `Story ${i}` }], ...(i % 2 === 0 ? { max_tokens: 500 } : {}) });
          return { ok: true as const, usage: answer.usage! };
        } catch (error) {
          return { ok: false as const, status: (error as { status?: number }).status, code: (error as { code?: string }).code };
        }
      }),
    );
    const admitted = results.filter((r) => r.ok);
    const refused = results.filter((r) => !r.ok);
    expect(admitted.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r.status === 429 && r.code === 'insufficient_quota')).toBe(true);
    // No refusal was retried: the upstream saw exactly the admitted requests.
    expect(fake.requests.length).toBe(admitted.length);
    // What each answer cost, in micros: 12 input tokens × $2.50/M (30) + its output × $100/M.
    const micros = admitted.reduce((sum, r) => sum + 30 + r.usage.completion_tokens * 100, 0);
    expect(micros).toBeLessThanOrEqual(1_000_000);
    // Redis holds exactly that, nothing left reserved; every replica's /usage says it.
    const month = new Date().toISOString().slice(0, 7);
    const budgetKey = `tollgate:{budget-acct}:b:${month}:account:budget-acct:spend`;
    await waitFor(async () => (await redis.cli('HGET', budgetKey, 'reserved')) === '0', 5000, 'every reservation settled');
    expect(Number(await redis.cli('HGET', budgetKey, 'used'))).toBe(micros);
    for (const gateway of gateways) {
      await waitFor(async () => (await (await fetch(`${gateway.metricsURL}/usage`)).json()).accounts['budget-acct']?.requests === 50, 5000, 'usage counted');
      const report = await (await fetch(`${gateway.metricsURL}/usage`)).json();
      expect(report.scope).toBe('cluster');
      expect(report.accounts['budget-acct'].spend).toBe(formatMicros(micros));
      expect(report.keys['budget-key'].spend).toBe(formatMicros(micros));
      expect(report.models['gpt-priced'].spend).toBe(formatMicros(micros));
    }
  });
});

function formatMicros(micros: number): string {
  let fraction = String(micros % 1_000_000).padStart(6, '0');
  while (fraction.length > 2 && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${Math.floor(micros / 1_000_000)}.${fraction}`;
}
