// Spend budgets while the shared store is unreachable, seen from the gateway: a spend budget is a
// monthly budget, so with the default failure policy (shared mode configured from the environment, no
// TOLLGATE_REDIS_BUDGETS) a priced request under one is refused with 503 limits_unavailable before it
// reaches the upstream, as a token budget's is; what costs nothing still runs. Switched open
// (TOLLGATE_REDIS_BUDGETS=open), the request is served and its cost is charged once Redis is back.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, expectErrorShape, model, newKey, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

const closedKey = newKey('closed-key', 'closed-acct');
const openKey = newKey('open-key', 'open-acct');
const priced = model('gpt-priced', [{ upstream: 'up' }]);
const MANIFESTS = (fakeURL: string) => [
  upstream('up', fakeURL),
  { ...priced, spec: { ...priced.spec, pricing: { inputPerMillion: '2.00', outputPerMillion: '8.00' } } },
  { apiVersion: API, kind: 'Plan', metadata: { name: 'budgeted' }, spec: { models: ['gpt-priced', 'service-test'], limits: { spendPerMonth: '10.00' } } },
  account('closed-acct', 'budgeted'),
  account('open-acct', 'budgeted'),
  apiKey(closedKey),
  apiKey(openKey),
];

let redis: TestRedis;
let fake: FakeUpstream;
let closed: TestGateway;
let open: TestGateway;

/** Shared mode as the environment configures it: the failure policy left at its default unless given. */
function sharedMode(env: Record<string, string> = {}) {
  return loadConfig({ TOLLGATE_REDIS_URL: redis.url, TOLLGATE_REDIS_TIMEOUT_MS: '500', ...env }).redis;
}

async function spendUsed(accountName: string): Promise<number> {
  const month = new Date().toISOString().slice(0, 7);
  return Number((await redis.cli('HGET', `tollgate:{${accountName}}:b:${month}:account:${accountName}:spend`, 'used')) || 0);
}

beforeAll(async () => {
  [redis, fake] = await Promise.all([startRedis(), startFakeUpstream('up', { usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 } })]);
  [closed, open] = await Promise.all([startTestGateway(MANIFESTS(fake.url), { redis: sharedMode() }), startTestGateway(MANIFESTS(fake.url), { redis: sharedMode({ TOLLGATE_REDIS_BUDGETS: 'open' }) })]);
});

afterAll(async () => {
  await Promise.all([closed?.stop(), open?.stop()]);
  await Promise.all([redis?.close(), fake?.close()]);
});

const ask = { model: 'gpt-priced', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 50 };
/** 100 × $2/M + 50 × $8/M, in micros. */
const COST = 600;

describe('a spend budget while Redis is unreachable', () => {
  it('refuses a priced request (closed by default) without asking the upstream, serves what costs nothing, and charges what the open policy let through once Redis is back', async () => {
    await closed.client(closedKey.key).chat.completions.create(ask);
    await waitFor(async () => (await spendUsed('closed-acct')) === COST, 5000, 'the cost to be settled in Redis');

    await redis.stop();
    try {
      const seen = fake.requests.length;
      const refusal = await closed.client(closedKey.key).chat.completions.create(ask).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(OpenAI.APIError);
      expect(refusal).toMatchObject({ status: 503, code: 'limits_unavailable' });
      expect((refusal as Error).message).toMatch(/cannot check monthly budgets/);
      // Priced by their parameters (no tokens), refused the same way; in OpenAI's error shape, with a retry hint.
      const moderation = await raw(closed, 'POST', '/v1/moderations', { key: closedKey.key, body: { model: 'gpt-priced', input: 'hi' } });
      expectErrorShape(moderation, 503, 'limits_unavailable');
      expect(moderation.headers.get('retry-after')).not.toBeNull();
      expect(fake.requests.length).toBe(seen);
      // service-test costs nothing: no spend budget is checked for it, so it runs.
      const free = await closed.client(closedKey.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] });
      expect(free.choices[0].message.content).toBeTruthy();

      // Switched open: served, counted nowhere for now.
      const served = await open.client(openKey.key).chat.completions.create(ask);
      expect(served.usage?.completion_tokens).toBe(50);
      expect(fake.requests.length).toBe(seen + 1);
    } finally {
      await redis.start();
    }
    // The settlement the open policy kept is written once Redis answers again: nothing it let through is lost.
    await waitFor(async () => (await spendUsed('open-acct')) === COST, 10_000, 'the kept settlement to reach Redis');
    // And the closed side admits again, once its own reconnect (backed off by up to 2 s while Redis
    // was down) has come round: wait for that, not for the open side's.
    await closed.shared!.redis.waitReady(10_000);
    await closed.client(closedKey.key).chat.completions.create(ask);
  });
});
