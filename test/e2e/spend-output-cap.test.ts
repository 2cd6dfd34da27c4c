// Under a spend budget a request that sets no output limit is held to what was reserved for it. With
// `Model.spec.maxOutputTokens` that is the model's own limit (fitted to what the budget still pays
// for), not the gateway's default reservation (TOLLGATE_RESERVED_OUTPUT_TOKENS, 1024): the limit the
// upstream is sent, per answer, for chat (n answers), completions and Responses.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, model, newKey, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

function priced(name: string, extra: Record<string, unknown> = {}) {
  const resource = model(name, [{ upstream: 'up', model: 'upstream-model' }]);
  return { ...resource, spec: { ...resource.spec, pricing: { inputPerMillion: '2.00', outputPerMillion: '8.00' }, ...extra } };
}

function spendPlan(name: string, limits: Record<string, unknown>) {
  return { apiVersion: API, kind: 'Plan', metadata: { name }, spec: { models: ['gpt-capped', 'gpt-default'], limits } };
}

describe('the output cap of a request without one, under a spend budget', () => {
  let fake: FakeUpstream;
  let gateway: TestGateway;
  const keys = { roomy: newKey('roomy-key', 'roomy'), tight: newKey('tight-key', 'tight'), tokens: newKey('tokens-key', 'tokens') };
  /** The output limit the upstream was last sent, whichever parameter carries it. */
  const sentLimit = () => {
    const body = JSON.parse(fake.requests.at(-1)!.body);
    return body.max_completion_tokens ?? body.max_output_tokens ?? body.max_tokens;
  };
  beforeAll(async () => {
    fake = await startFakeUpstream('up');
    gateway = await startTestGateway([
      upstream('up', fake.url),
      priced('gpt-capped', { maxOutputTokens: 4000 }),
      priced('gpt-default'),
      spendPlan('roomy', { spendPerMonth: '100.00' }),
      spendPlan('tight', { spendPerMonth: '0.02' }),
      spendPlan('tokens', { tokensPerMonth: 1_000_000 }),
      account('roomy', 'roomy'),
      account('tight', 'tight'),
      account('tokens', 'tokens'),
      apiKey(keys.roomy),
      apiKey(keys.tight),
      apiKey(keys.tokens),
    ]);
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  it('is the model’s maxOutputTokens when the manifest names it, per answer, on every token endpoint; the gateway default otherwise', async () => {
    const client = gateway.client(keys.roomy.key);
    const messages = [{ role: 'user' as const, content: 'hi' }];
    await client.chat.completions.create({ model: 'gpt-capped', messages });
    expect(sentLimit()).toBe(4000);
    await client.chat.completions.create({ model: 'gpt-capped', messages, n: 2 });
    expect(sentLimit()).toBe(4000);
    await client.completions.create({ model: 'gpt-capped', prompt: 'hi' });
    expect(sentLimit()).toBe(4000);
    await client.responses.create({ model: 'gpt-capped', input: 'hi' });
    expect(sentLimit()).toBe(4000);
    // A limit the client set is its own.
    await client.chat.completions.create({ model: 'gpt-capped', messages, max_tokens: 100 });
    expect(sentLimit()).toBe(100);
    await client.chat.completions.create({ model: 'gpt-default', messages });
    expect(sentLimit()).toBe(1024);
    // Without a spend budget nothing is written: the model's limit is the upstream's own business.
    await gateway.client(keys.tokens.key).chat.completions.create({ model: 'gpt-capped', messages });
    expect(sentLimit()).toBeUndefined();
  });

  it('shrinks to what the budget still pays for, and is refused when that is nothing', async () => {
    const client = gateway.client(keys.tight.key);
    // 10 input tokens as estimated ($0.00002), then $0.01998 pays for 2497 output tokens at $8/M, fewer than 4000.
    fake.behave({ usage: { prompt_tokens: 10, completion_tokens: 5000, total_tokens: 5010 } });
    const capped = await client.chat.completions.create({ model: 'gpt-capped', messages: [{ role: 'user', content: 'hi' }] });
    expect(sentLimit()).toBe(2497);
    expect(capped.usage?.completion_tokens).toBe(2497);
    const usage = await (await fetch(`${gateway.telemetry.metricsURL}/usage`)).json();
    expect(usage.accounts.tight.spend).toBe('0.019996');
    // $0.000004 left: not even the input.
    const seen = fake.requests.length;
    const refusal = await client.chat.completions.create({ model: 'gpt-capped', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refusal as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
    expect(fake.requests.length).toBe(seen);
    fake.behave({});
  });
});
