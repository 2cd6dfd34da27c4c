// Money through the public surface: Models priced in the manifest, requests made with the official
// SDK against the real gateway and the OpenAI-compatible fake upstream, each charged to the micro
// from the usage the upstream reported (GET /usage, the access line), and spend budgets per account
// and per key that are never run past: outputs fitted to what is left, refusals in OpenAI's quota
// shape that the SDK does not retry, a month that rolls over, a restart that forgets nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../gateway/src/cli/cli.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, expectErrorShape, model, newKey, raw, startTestGateway, upstream, type TestGateway, type TestKey } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

function testClock(startIso: string) {
  const clock = { now: Date.parse(startIso), advance: (ms: number) => (clock.now += ms) };
  return clock;
}

function priced(name: string, pricing: Record<string, unknown>) {
  const resource = model(name, [{ upstream: 'up', model: 'upstream-model' }]);
  return { ...resource, spec: { ...resource.spec, pricing } };
}

function spendPlan(name: string, models: string[], limits: Record<string, unknown> = {}) {
  return { apiVersion: API, kind: 'Plan', metadata: { name }, spec: { models, limits } };
}

function keyWithLimits(k: TestKey, limits: Record<string, unknown>) {
  const resource = apiKey(k);
  return { ...resource, spec: { ...resource.spec, limits } };
}

const MODELS = [
  priced('gpt-priced', { inputPerMillion: '2.00', cachedInputPerMillion: '0.50', outputPerMillion: '8.00' }),
  priced('embed-priced', { inputPerMillion: '1000.00' }),
  priced('image-priced', { perImage: { default: '0.04', prices: [{ size: '1024x1792', quality: 'hd', price: '0.12' }, { size: '1024x1792', price: '0.08' }] } }),
  priced('whisper-priced', { perAudioSecond: '0.0001' }),
  priced('tts-priced', { perMillionCharacters: '15.00' }),
  priced('floor-priced', { inputPerMillion: '1.00', perRequest: '0.01' }),
  model('free-model', [{ upstream: 'up' }]),
];
const ALL = ['gpt-priced', 'embed-priced', 'image-priced', 'whisper-priced', 'tts-priced', 'floor-priced', 'free-model', 'service-test'];

async function usageReport(gateway: TestGateway) {
  const response = await fetch(`${gateway.telemetry.metricsURL}/usage`);
  expect(response.status).toBe(200);
  return (await response.json()) as any;
}

/** The access line of the last request of `apiKey` (written when its exchange has ended). */
function accessLines(gateway: TestGateway, key: string) {
  return gateway.logs.filter((line) => line.apiKey === key && line.route !== undefined && line.status !== undefined);
}

describe('pricing: every priced request is charged what the upstream reported, to the micro', () => {
  let fake: FakeUpstream;
  let gateway: TestGateway;
  const key = newKey('acme-ci', 'acme');
  const other = newKey('acme-web', 'acme');
  beforeAll(async () => {
    fake = await startFakeUpstream('up');
    gateway = await startTestGateway([upstream('up', fake.url), ...MODELS, spendPlan('open', ALL), account('acme', 'open'), apiKey(key), apiKey(other)]);
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  it('prices chat JSON with cached input and reasoning output at their own prices, per account, key and model', async () => {
    const client = gateway.client(key.key);
    fake.behave({
      usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 400 }, completion_tokens_details: { reasoning_tokens: 200 } },
    });
    const answer = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.usage?.completion_tokens_details?.reasoning_tokens).toBe(200);
    // 600 × $2/M + 400 cached × $0.50/M + 500 (reasoning included) × $8/M = $0.0054
    const report = await usageReport(gateway);
    expect(report.currency).toBe('USD');
    expect(report.accounts.acme).toMatchObject({ inputTokens: 1000, outputTokens: 500, requests: 1, spend: '0.0054' });
    expect(report.keys['acme-ci']).toEqual({ account: 'acme', inputTokens: 1000, outputTokens: 500, requests: 1, spend: '0.0054' });
    expect(report.models['gpt-priced']).toMatchObject({ requests: 1, spend: '0.0054' });
    const line = accessLines(gateway, 'acme-ci').at(-1)!;
    expect(line).toMatchObject({ cost: '0.0054', inputTokens: 1000, outputTokens: 500, cachedInputTokens: 400, reasoningTokens: 200 });
  });

  it('prices streams by their usage chunk, whether or not the client asked for it', async () => {
    const client = gateway.client(other.key);
    fake.behave({ chunks: 3, usage: { prompt_tokens: 2000, completion_tokens: 1000, total_tokens: 3000 } });
    // $0.004 + $0.008 each
    const withUsage = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    let seenUsage = false;
    for await (const chunk of withUsage) if (chunk.usage) seenUsage = true;
    expect(seenUsage).toBe(true);
    const without = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const chunk of without) expect(chunk.usage ?? null).toBeNull();
    await expect.poll(async () => (await usageReport(gateway)).keys['acme-web']?.spend).toBe('0.024');
    expect(accessLines(gateway, 'acme-web').map((line) => line.cost)).toEqual(['0.012', '0.012']);
  });

  it('prices embeddings, images by size and quality, transcriptions by seconds and speech by characters', async () => {
    const client = gateway.client(other.key);
    const before = (await usageReport(gateway)).keys['acme-web'].spend;
    expect(before).toBe('0.024');
    fake.behave({});
    await client.embeddings.create({ model: 'embed-priced', input: 'hello' }); // 3 tokens × $1000/M = $0.003
    await client.images.generate({ model: 'image-priced', prompt: 'a cat', n: 2, size: '1024x1792', quality: 'hd' }); // 2 × $0.12
    await client.images.generate({ model: 'image-priced', prompt: 'a cat', size: '1024x1792' }); // $0.08
    await client.images.generate({ model: 'image-priced', prompt: 'a cat' }); // $0.04
    fake.behave({ audioSeconds: 90 });
    await client.audio.transcriptions.create({ model: 'whisper-priced', file: await toFile(Buffer.alloc(4000, 1), 'a.mp3') }); // 90 s × $0.0001
    await client.audio.speech.create({ model: 'tts-priced', input: 'x'.repeat(1000), voice: 'alloy' }); // 1000 × $15/M
    await client.embeddings.create({ model: 'free-model', input: 'hello' }); // no pricing: nothing
    await client.embeddings.create({ model: 'floor-priced', input: 'hello' }); // 3 tokens at $1/M, but at least $0.01
    const costs = accessLines(gateway, 'acme-web').slice(2).map((line) => line.cost ?? null);
    expect(costs).toEqual(['0.003', '0.24', '0.08', '0.04', '0.009', '0.015', null, '0.01']);
    const report = await usageReport(gateway);
    // 0.024 + 0.003 + 0.24 + 0.08 + 0.04 + 0.009 + 0.015 + 0.01
    expect(report.keys['acme-web'].spend).toBe('0.421');
    expect(report.accounts.acme.spend).toBe('0.4264');
    expect(report.models['image-priced']).toMatchObject({ requests: 3, spend: '0.36' });
    expect(report.models['free-model']).toMatchObject({ requests: 1, spend: '0.00' });
  });

  it('prices the Responses API by its input and output token details', async () => {
    const client = gateway.client(key.key);
    fake.behave({ usage: { input_tokens: 1000, input_tokens_details: { cached_tokens: 400 }, output_tokens: 500, output_tokens_details: { reasoning_tokens: 200 }, total_tokens: 1500 } });
    await client.responses.create({ model: 'gpt-priced', input: 'hi' });
    expect(accessLines(gateway, 'acme-ci').at(-1)).toMatchObject({ cost: '0.0054', cachedInputTokens: 400, reasoningTokens: 200 });
    fake.behave({});
  });

  it('charges a stream cut short without usage what was reserved for it, since the upstream may have billed it', async () => {
    const client = gateway.client(key.key);
    fake.behave({ chunks: 5, resetAfterChunks: 2 });
    const stream = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100, stream: true });
    await expect(async () => {
      for await (const _ of stream);
    }).rejects.toThrow();
    // Its reservation: 11 input tokens as estimated (text by characters, max_tokens' number one) × $2/M + 100 × $8/M
    await expect.poll(() => accessLines(gateway, 'acme-ci').at(-1)?.cost).toBe('0.000822');
    fake.behave({});
  });

  it('`tollgate usage` prints the spend per account, key and model', async () => {
    let out = '';
    const code = await runCli(['usage', '--url', gateway.telemetry.metricsURL], { env: {}, out: (text) => (out += text), err: () => {} });
    expect(code).toBe(0);
    expect(out).toMatch(/spend in USD/);
    expect(out).toMatch(/^acme\s+\d+\s+\d+\s+\d+\s+0\.432622$/m);
    expect(out).toMatch(/^acme-web\s+acme\s+.*0\.421$/m);
    expect(out).toMatch(/^image-priced\s+3\s+.*0\.36$/m);
  });

  it('charges service-test nothing', async () => {
    await gateway.client(key.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] });
    expect(accessLines(gateway, 'acme-ci').at(-1)!.cost).toBeUndefined();
    expect((await usageReport(gateway)).models['service-test']).toMatchObject({ requests: 1, spend: '0.00' });
  });
});

describe('spend budgets: never run past, refused as OpenAI refuses a spent quota', () => {
  const clock = testClock('2026-11-30T23:00:00.000Z');
  let fake: FakeUpstream;
  let gateway: TestGateway;
  let dataDir: string;
  const keys = { tight: newKey('tight-key', 'tight'), capped: newKey('capped-key', 'capped'), team: newKey('team-main', 'team'), intern: newKey('team-intern', 'team') };
  const manifests: unknown[] = [
    null,
    ...MODELS,
    // $0.0054 a request (usage 1000/500 as below): $0.01 pays for one, not two.
    spendPlan('tight', ALL, { spendPerMonth: '0.01' }),
    spendPlan('team', ALL, { spendPerMonth: '1.00' }),
    account('tight', 'tight'),
    account('capped', 'tight'),
    account('team', 'team'),
    apiKey(keys.tight),
    apiKey(keys.capped),
    apiKey(keys.team),
    keyWithLimits(keys.intern, { spendPerMonth: '0.006' }),
  ];
  const usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 400 } };
  beforeAll(async () => {
    fake = await startFakeUpstream('up', { usage });
    manifests[0] = upstream('up', fake.url);
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-spend-'));
    gateway = await startTestGateway(manifests, { clock: () => clock.now, dataDir });
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses with 429 insufficient_quota, x-should-retry false, naming the budget and its renewal; the SDK does not retry', async () => {
    const client = gateway.client(keys.tight.key, { maxRetries: 3 });
    // Worst case of an explicit max_tokens 500: 10 input tokens (estimated) × $2/M + 500 × $8/M, below $0.01;
    // charged what the upstream reports: 600 × $2/M + 400 cached × $0.50/M + 500 × $8/M = $0.0054.
    await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 });
    const seen = fake.requests.length;
    const before = accessLines(gateway, 'tight-key').length;
    // $0.0054 spent; a worst case of 1000 output tokens ($0.008) no longer fits the $0.0046 left.
    const refusal = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
    const error = refusal as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.status).toBe(429);
    expect(error.code).toBe('insufficient_quota');
    expect(error.type).toBe('insufficient_quota');
    expect(error.headers.get('x-should-retry')).toBe('false');
    expect(error.message).toMatch(/Monthly spend budget reached for account tight: Limit 0\.01 USD, Spent or reserved 0\.0054/);
    expect(error.message).toMatch(/renews at 2026-12-01T00:00:00\.000Z/);
    expect(error.message).toMatch(/Lower max_tokens/);
    // One request reached the gateway (no SDK retry), none the upstream.
    expect(accessLines(gateway, 'tight-key').length).toBe(before + 1);
    expect(fake.requests.length).toBe(seen);
    const body = await raw(gateway, 'POST', '/v1/chat/completions', { key: keys.tight.key, body: { model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 } });
    expectErrorShape(body, 429, 'insufficient_quota');
    expect(body.json.error.type).toBe('insufficient_quota');
  });

  it('caps the output of a request that set no limit to what the budget still pays for, and spends the budget exactly', async () => {
    const client = gateway.client(keys.capped.key);
    // An upstream that would write 2000 tokens, stopped by the request's limit; its input as the gateway estimates it (10 tokens).
    fake.behave({ usage: { prompt_tokens: 10, completion_tokens: 2000, total_tokens: 2010 } });
    await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 }); // 10 × $2/M + 500 × $8/M = $0.00402
    // $0.00598 left: after the input's $0.00002, 745 output tokens at $8/M, fewer than the default 1024.
    const capped = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] });
    expect(JSON.parse(fake.requests.at(-1)!.body).max_completion_tokens).toBe(745);
    expect(capped.choices[0].finish_reason).toBe('length');
    expect((await usageReport(gateway)).accounts.capped.spend).toBe('0.01');
    // Nothing is left for even one output token: refused, and the upstream never asked.
    const seen = fake.requests.length;
    const refusal = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refusal as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
    expect(fake.requests.length).toBe(seen);
    fake.behave({ usage });
  });

  it('holds a key to its own budget inside its account’s', async () => {
    const intern = gateway.client(keys.intern.key);
    await intern.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 }); // $0.0054 of $0.006
    const refusal = await intern.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }).catch((error: unknown) => error);
    expect((refusal as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
    expect((refusal as Error).message).toMatch(/for API key team-intern: Limit 0\.006 USD/);
    // The account's other key still has the account's room.
    await gateway.client(keys.team.key).chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 });
    const report = await usageReport(gateway);
    expect(report.keys['team-intern'].spend).toBe('0.0054');
    expect(report.accounts.team.spend).toBe('0.0108');
    // With room to spare, a request without an output limit is still held to what was reserved for it.
    await gateway.client(keys.team.key).chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }] });
    expect(JSON.parse(fake.requests.at(-1)!.body).max_completion_tokens).toBe(1024);
  });

  it('keeps the month’s spend across a restart, and starts afresh when the month rolls over', async () => {
    await gateway.close();
    gateway = await startTestGateway(manifests, { clock: () => clock.now, dataDir });
    const client = gateway.client(keys.tight.key);
    const refusal = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 }).catch((error: unknown) => error);
    expect((refusal as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('insufficient_quota');
    clock.advance(3600_000); // 2026-12-01T00:00Z
    await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 });
    expect((await usageReport(gateway)).month).toBe('2026-12');
  });
});
