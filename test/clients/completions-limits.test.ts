// Plan limits on POST /v1/completions: when a monthly budget leaves less than the default answer
// reservation, the cap is written into the proxied body as `max_tokens` (the parameter this
// endpoint has; max_completion_tokens is chat's).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

let fake: FakeUpstream;
let gw: TestGateway;
const key = newKey('tight-key', 'tight-app');

beforeAll(async () => {
  fake = await startFakeUpstream('fake');
  process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
  gw = await startTestGateway([upstream('fake', fake.url), model('fake-chat', [{ upstream: 'fake', model: 'upstream-model' }]), plan('tight', ['fake-chat'], { tokensPerMonth: 200 }), account('tight-app', 'tight'), apiKey(key)]);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

it('a nearly spent budget caps a proxied completion with max_tokens', async () => {
  const answer = await raw(gw, 'POST', '/v1/completions', { key: key.key, body: { model: 'fake-chat', prompt: 'Hi' } });
  expect(answer.status).toBe(200);
  const sent = JSON.parse(fake.requests.at(-1)!.body);
  expect(sent.max_tokens).toBeGreaterThan(0);
  expect(sent.max_tokens).toBeLessThan(200);
  expect(sent).not.toHaveProperty('max_completion_tokens');
});
