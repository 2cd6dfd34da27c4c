// Shared mode's other stores against a real redis-server: the failure policy, usage counters,
// routed ids, stored responses and images, each seen from two "replicas" (two connections).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ApiError } from '../../gateway/src/http/errors.ts';
import type { Admission } from '../../gateway/src/limits/limit-store.ts';
import { createSharedStores, type SharedStores } from '../../gateway/src/storage/shared-store.ts';
import type { RedisConfig } from '../../gateway/src/storage/redis-config.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const log = pino({ level: 'silent' });
let redis: TestRedis;
const opened: SharedStores[] = [];

async function replicas(n: number, overrides: Partial<RedisConfig> = {}): Promise<SharedStores[]> {
  const config: RedisConfig = { url: redis.url, prefix: `s-${Math.random().toString(36).slice(2)}:`, commandTimeoutMs: 250, leaseMs: 15_000, rateLimits: 'open', budgets: 'closed', files: { maxBytes: 1024 * 1024, maxCount: 10 }, ...overrides };
  const stores = Array.from({ length: n }, () => createSharedStores(config, log));
  opened.push(...stores);
  await Promise.all(stores.map((s) => s.redis.waitReady()));
  return stores;
}

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const stores of opened.splice(0)) await stores.close();
});
afterAll(async () => {
  await redis?.close();
});

describe('usage counters', () => {
  it('count every account, key and model once for the whole cluster, spend included', async () => {
    const [a, b] = await replicas(2);
    await Promise.all([
      a.usage.record('acme', '2026-11', { inputTokens: 10, outputTokens: 5, spend: 1_250_000, key: 'acme-ci', model: 'gpt-4o' }),
      b.usage.record('acme', '2026-11', { inputTokens: 1, outputTokens: 2, spend: 4215, key: 'acme-web', model: 'gpt-4o' }),
      b.usage.record('zeta', '2026-11', { inputTokens: 7, outputTokens: 0 }),
      a.usage.record('acme', '2026-10', { inputTokens: 100, outputTokens: 100, spend: 99 }),
    ]);
    const report = await b.usageReport('pod-b', '2026-11');
    expect(report).toEqual({
      replica: 'pod-b',
      scope: 'cluster',
      month: '2026-11',
      currency: 'USD',
      accounts: { acme: { inputTokens: 11, outputTokens: 7, requests: 2, spend: '1.254215' }, zeta: { inputTokens: 7, outputTokens: 0, requests: 1, spend: '0.00' } },
      keys: {
        'acme-ci': { account: 'acme', inputTokens: 10, outputTokens: 5, requests: 1, spend: '1.25' },
        'acme-web': { account: 'acme', inputTokens: 1, outputTokens: 2, requests: 1, spend: '0.004215' },
      },
      models: { 'gpt-4o': { inputTokens: 11, outputTokens: 7, requests: 2, spend: '1.254215' } },
    });
  });
});

describe('routed ids, stored responses and images', () => {
  it('resolve on every replica and only for their account', async () => {
    const [a, b] = await replicas(2);
    await a.routedIds.remember('acme', 'file-abc', { upstream: 'openai', kind: 'file' });
    expect(await b.routedIds.lookup('acme', 'file-abc')).toEqual({ upstream: 'openai', kind: 'file' });
    expect(await b.routedIds.lookup('other', 'file-abc')).toBeUndefined();
    await b.routedIds.forget('acme', 'file-abc');
    expect(await a.routedIds.lookup('acme', 'file-abc')).toBeUndefined();

    const ra = a.responses<{ text: string }>();
    const rb = b.responses<{ text: string }>();
    expect(await ra.put('acme', 'resp_1', { text: 'hello' }, 100)).toBe(true);
    expect(await rb.get('acme', 'resp_1')).toEqual({ text: 'hello' });
    expect(await rb.get('other', 'resp_1')).toBeUndefined();
    expect(await rb.delete('other', 'resp_1')).toBe(false);
    expect(await rb.delete('acme', 'resp_1')).toBe(true);
    expect(await ra.get('acme', 'resp_1')).toBeUndefined();
    expect(await ra.put('acme', 'resp_2', { text: 'x'.repeat(10) }, ra.maxEntryBytes + 1)).toBe(false);

    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    const id = await a.images.save(png);
    const loaded = await b.images.load(id);
    expect(loaded?.bytes.equals(png)).toBe(true);
    expect(loaded!.expiresAt - Date.now()).toBeGreaterThan(59 * 60 * 1000);
  });
});

describe('failure policy while Redis is away', () => {
  it('fails rate limits open and budgets closed by default, and the reverse when switched', async () => {
    const [defaults] = await replicas(1);
    const [switched] = await replicas(1, { rateLimits: 'closed', budgets: 'open' });
    await redis.stop();
    try {
      await waitFor(() => defaults.health().degraded && switched.health().degraded, 5000, 'both to notice');
      const ask = (limits: Partial<Admission>): Admission => ({ account: 'acme', slots: [], requests: [], tokenWindows: [], budgets: [], period: '2026-11', tokens: null, ...limits });
      const tokens = { input: 5, output: 5, fit: false, minOutput: 0, choices: 1 };
      const rate = ask({ requests: [{ key: 'rpm', limit: 1 }], slots: [{ key: 'open', limit: 1 }] });
      const budget = ask({ budgets: [{ key: 'acct', limit: 100 }], tokens });
      expect(await defaults.limitStore.admit(rate, Date.now())).toMatchObject({ admitted: true });
      const refusal = await Promise.resolve(defaults.limitStore.admit(budget, Date.now())).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(ApiError);
      expect(refusal).toMatchObject({ status: 503, code: 'limits_unavailable' });
      // A spend budget is a budget: refused the same way, even for an image (no tokens).
      const spend = ask({ spendBudgets: [{ key: 'acct:spend', limit: 1_000_000 }], spend: { fixed: 40_000, outputPerMillion: 0, floor: 0 } });
      await expect(Promise.resolve(defaults.limitStore.admit(spend, Date.now()))).rejects.toMatchObject({ status: 503, code: 'limits_unavailable' });

      await expect(Promise.resolve(switched.limitStore.admit(rate, Date.now()))).rejects.toMatchObject({ status: 503 });
      expect(await switched.limitStore.admit(budget, Date.now())).toMatchObject({ admitted: true, amount: 10 });
      // Usage that happened meanwhile is kept, not lost.
      await switched.usage.record('acme', '2026-11', { inputTokens: 3, outputTokens: 4 });
      expect(switched.usage.pending).toBe(1);
    } finally {
      await redis.start();
    }
    await waitFor(() => !switched.health().degraded && switched.usage.pending === 0, 10_000, 'recovery');
    expect((await switched.usageReport('r', '2026-11')).accounts.acme).toEqual({ inputTokens: 3, outputTokens: 4, requests: 1, spend: '0.00' });
  });
});
