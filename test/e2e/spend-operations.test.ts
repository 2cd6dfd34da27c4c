// Money for the operations besides chat: moderations (priced by `perRequest`, a floor for anything, and
// by their input at the input price) and audio translations (by the seconds the upstream reports),
// each reserved before it runs and settled when it ends, so a spend budget refuses them with OpenAI's
// quota answer once it is spent. The official SDK against the real gateway and the fake upstream.
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, expectErrorShape, model, newKey, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

function priced(name: string, pricing: Record<string, unknown>) {
  const resource = model(name, [{ upstream: 'up', model: 'upstream-model' }]);
  return { ...resource, spec: { ...resource.spec, pricing } };
}

function spendPlan(name: string, models: string[], spendPerMonth: string) {
  return { apiVersion: API, kind: 'Plan', metadata: { name }, spec: { models, limits: { spendPerMonth } } };
}

const MODELS = [
  priced('moderation-floor', { perRequest: '0.01' }),
  priced('moderation-tokens', { inputPerMillion: '1000.00', outputPerMillion: '1000.00' }),
  priced('whisper-priced', { perAudioSecond: '0.0001' }),
  model('moderation-free', [{ upstream: 'up' }]),
];
const ALL = ['moderation-floor', 'moderation-tokens', 'whisper-priced', 'moderation-free', 'service-test'];

async function usageReport(gateway: TestGateway) {
  const response = await fetch(`${gateway.telemetry.metricsURL}/usage`);
  expect(response.status).toBe(200);
  return (await response.json()) as any;
}

function accessLines(gateway: TestGateway, key: string) {
  return gateway.logs.filter((line) => line.apiKey === key && line.route !== undefined && line.status !== undefined);
}

function quotaError(error: unknown) {
  expect(error).toBeInstanceOf(OpenAI.RateLimitError);
  const refusal = error as InstanceType<typeof OpenAI.RateLimitError>;
  expect(refusal.status).toBe(429);
  expect(refusal.code).toBe('insufficient_quota');
  expect(refusal.type).toBe('insufficient_quota');
  expect(refusal.headers.get('x-should-retry')).toBe('false');
  return refusal;
}

describe('moderations and translations are priced and held to spend budgets', () => {
  let fake: FakeUpstream;
  let gateway: TestGateway;
  const keys = { floor: newKey('floor-key', 'floor'), tokens: newKey('tokens-key', 'tokens'), audio: newKey('audio-key', 'audio') };
  beforeAll(async () => {
    fake = await startFakeUpstream('up');
    gateway = await startTestGateway([
      upstream('up', fake.url),
      ...MODELS,
      // Two moderations at the $0.01 floor, not three.
      spendPlan('floor', ALL, '0.025'),
      spendPlan('tokens', ALL, '0.015'),
      spendPlan('audio', ALL, '0.001'),
      account('floor', 'floor'),
      account('tokens', 'tokens'),
      account('audio', 'audio'),
      apiKey(keys.floor),
      apiKey(keys.tokens),
      apiKey(keys.audio),
    ]);
  });
  afterAll(async () => {
    await gateway.stop();
    await fake.close();
  });

  it('charges a moderation priced only by perRequest its floor, and refuses one the budget cannot pay (not retried, upstream not asked)', async () => {
    const client = gateway.client(keys.floor.key, { maxRetries: 3 });
    for (let i = 0; i < 2; i++) {
      const answer = await client.moderations.create({ model: 'moderation-floor', input: `message ${i}` });
      expect(answer.results).toHaveLength(1);
      expect(answer.results[0].flagged).toBe(false);
    }
    expect(accessLines(gateway, 'floor-key').map((line) => line.cost)).toEqual(['0.01', '0.01']);
    expect((await usageReport(gateway)).accounts.floor.spend).toBe('0.02');

    const seen = fake.requests.length;
    const refusal = quotaError(await client.moderations.create({ model: 'moderation-floor', input: 'one more' }).catch((error: unknown) => error));
    expect(refusal.message).toMatch(/Monthly spend budget reached for account floor: Limit 0\.025 USD, Spent or reserved 0\.02, Left 0\.005, This request may cost up to 0\.01\./);
    // One request reached the gateway (no SDK retry), none the upstream.
    expect(accessLines(gateway, 'floor-key')).toHaveLength(3);
    expect(fake.requests.length).toBe(seen);
    const body = await raw(gateway, 'POST', '/v1/moderations', { key: keys.floor.key, body: { model: 'moderation-floor', input: 'one more' } });
    expectErrorShape(body, 429, 'insufficient_quota');

    // What costs nothing still runs on a spent budget: an unpriced model, and service-test (the default).
    expect((await client.moderations.create({ model: 'moderation-free', input: 'free' })).results).toHaveLength(1);
    expect((await client.moderations.create({ input: 'free' })).results).toHaveLength(1);
    expect((await usageReport(gateway)).accounts.floor.spend).toBe('0.02');
  });

  it('prices a moderation by its input at the input price (it reports no usage: charged its reservation)', async () => {
    const client = gateway.client(keys.tokens.key);
    // 40 characters: 10 tokens as estimated × $1000/M = $0.01; moderations write no output.
    await client.moderations.create({ model: 'moderation-tokens', input: 'x'.repeat(40) });
    expect(accessLines(gateway, 'tokens-key').at(-1)!.cost).toBe('0.01');
    // $0.005 left: 20 tokens ($0.02) do not fit (refused: charged nothing), 4 ($0.004) do.
    quotaError(await client.moderations.create({ model: 'moderation-tokens', input: 'x'.repeat(80) }).catch((error: unknown) => error));
    await client.moderations.create({ model: 'moderation-tokens', input: ['x'.repeat(8), 'y'.repeat(8)] });
    expect(accessLines(gateway, 'tokens-key').map((line) => line.cost)).toEqual(['0.01', '0.00', '0.004']);
    expect((await usageReport(gateway)).keys['tokens-key'].spend).toBe('0.014');
  });

  it('prices translations by the seconds the upstream reports, and refuses one whose file the budget cannot pay for', async () => {
    const client = gateway.client(keys.audio.key);
    fake.behave({ audioSeconds: 5 });
    // Reserved as 0.5 s (1000 bytes at 16 kbit/s), settled to the 5 s reported: 5 × $0.0001.
    const translated = await client.audio.translations.create({ model: 'whisper-priced', file: await toFile(Buffer.alloc(1000, 1), 'a.mp3') });
    expect(translated.text).toMatch(/heard 1000 bytes/);
    expect(fake.requests.at(-1)!.path).toMatch(/\/audio\/translations$/);
    expect(accessLines(gateway, 'audio-key').at(-1)!.cost).toBe('0.0005');
    expect((await usageReport(gateway)).models['whisper-priced']).toMatchObject({ requests: 1, spend: '0.0005' });
    // $0.0005 left; a 40 kB file may hold 20 s ($0.002).
    const seen = fake.requests.length;
    const refusal = quotaError(await client.audio.translations.create({ model: 'whisper-priced', file: await toFile(Buffer.alloc(40_000, 1), 'b.mp3') }).catch((error: unknown) => error));
    expect(refusal.message).toMatch(/This request may cost up to 0\.002\./);
    expect(fake.requests.length).toBe(seen);
    fake.behave({});
  });
});
