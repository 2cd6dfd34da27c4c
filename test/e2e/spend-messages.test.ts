// The Anthropic Messages API (POST /v1/messages) is held to spend and token budgets as chat
// completions are: its worst cost and its tokens are reserved in the same admission before it runs,
// so a spent budget refuses it (OpenAI's quota answer in Anthropic's envelope, which the Anthropic SDK
// does not retry) and a budget is never run past. The official Anthropic SDK against the real gateway,
// with a priced model served by the OpenAI-compatible fake upstream.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, model, newKey, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

const priced = model('gpt-priced', [{ upstream: 'up', model: 'upstream-model' }]);

function budgetPlan(name: string, limits: Record<string, unknown>) {
  return { apiVersion: API, kind: 'Plan', metadata: { name }, spec: { models: ['gpt-priced'], limits } };
}

describe('the Messages API under budgets', () => {
  let fake: FakeUpstream;
  let gateway: TestGateway;
  const keys = { spend: newKey('spend-key', 'spend'), tokens: newKey('tokens-key', 'tokens') };
  beforeAll(async () => {
    // Every answer would be 500 tokens; the upstream stops at the request's limit, as a real one does.
    fake = await startFakeUpstream('up', { usage: { prompt_tokens: 20, completion_tokens: 500, total_tokens: 520 } });
    gateway = await startTestGateway([
      upstream('up', fake.url),
      { ...priced, spec: { ...priced.spec, pricing: { inputPerMillion: '2.00', outputPerMillion: '8.00' } } },
      // 20 × $2/M + 500 × $8/M = $0.00404 an answer: $0.01 pays for two, not three.
      budgetPlan('spend', { spendPerMonth: '0.01' }),
      budgetPlan('tokens', { tokensPerMonth: 1200 }),
      account('spend', 'spend'),
      account('tokens', 'tokens'),
      apiKey(keys.spend),
      apiKey(keys.tokens),
    ]);
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  it('refuses a request the spend budget cannot pay before it reaches the upstream, not retried by the SDK', async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: keys.spend.key, maxRetries: 3 });
    const ask = { model: 'gpt-priced', max_tokens: 500, messages: [{ role: 'user' as const, content: 'hi' }] };
    for (let i = 0; i < 2; i++) expect((await client.messages.create(ask)).usage.output_tokens).toBe(500);
    const usage = await (await fetch(`${gateway.telemetry.metricsURL}/usage`)).json();
    expect(usage.accounts.spend.spend).toBe('0.00808');
    const seen = fake.requests.length;
    const refusal = await client.messages.create(ask).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(Anthropic.RateLimitError);
    expect((refusal as InstanceType<typeof Anthropic.RateLimitError>).status).toBe(429);
    expect((refusal as Error).message).toMatch(/Monthly spend budget reached for account spend/);
    expect((refusal as InstanceType<typeof Anthropic.RateLimitError>).headers.get('x-should-retry')).toBe('false');
    expect(fake.requests.length).toBe(seen);
    // Three requests reached the gateway: the refusal was not retried.
    expect(gateway.logs.filter((line) => line.apiKey === 'spend-key' && line.status !== undefined && line.route !== undefined)).toHaveLength(3);
  });

  it('reserves its tokens in a monthly token budget before it runs', async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: keys.tokens.key, maxRetries: 0 });
    const ask = { model: 'gpt-priced', max_tokens: 500, messages: [{ role: 'user' as const, content: 'hi' }] };
    await client.messages.create(ask); // 520 of 1200
    await client.messages.create(ask); // 1040 of 1200: 160 left, less than this request's 500 of output
    const seen = fake.requests.length;
    const refusal = await client.messages.create(ask).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(Anthropic.RateLimitError);
    expect((refusal as Error).message).toMatch(/Monthly token budget reached for account tokens/);
    expect(fake.requests.length).toBe(seen);
  });
});
