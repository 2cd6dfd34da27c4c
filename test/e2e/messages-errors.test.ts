// Errors of the Messages API and of Anthropic's model discovery as Anthropic's clients read them:
// Anthropic's envelope and statuses, raised by the Anthropic SDK as its own classes — 529
// overloaded_error where OpenAI's clients get 503, 429 rate_limit_error from a plan's limits (with the
// access line and metrics every route records) and 400 from a token limit it can never fit, and
// GET /v1/models's errors when asked with anthropic-version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { waitFor } from '../helpers/wait.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
const key = newKey('k', 'acme');
const tight = newKey('tight', 'tight-co');
const tokens = newKey('tokens', 'tokens-co');

/** A local port nothing listens on: an upstream there is never available. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const hello = (model: string) => ({ model, max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] });

describe('Messages API errors in Anthropic envelope', () => {
  let busy: FakeUpstream;
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    busy = await startFakeUpstream('busy', { status: 503 });
    gw = await startTestGateway([
      upstream('busy', busy.url),
      upstream('gone', `http://127.0.0.1:${await closedPort()}/v1`),
      model('gpt-busy', [{ upstream: 'busy' }]),
      model('gpt-gone', [{ upstream: 'gone' }]),
      plan('pro', ['gpt-busy', 'gpt-gone']),
      plan('one-a-minute', ['service-test'], { requestsPerMinute: 1 }),
      plan('few-tokens', ['service-test'], { tokensPerMinute: 1000 }),
      account('acme', 'pro'),
      account('tight-co', 'one-a-minute'),
      account('tokens-co', 'few-tokens'),
      apiKey(key),
      apiKey(tight),
      apiKey(tokens),
    ]);
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await busy?.close();
  });

  async function accessLine(requestId: string | null): Promise<Record<string, any>> {
    expect(requestId).toBeTruthy();
    let line: Record<string, any> | undefined;
    await waitFor(() => (line = gw.logs.find((l) => l.requestId === requestId && 'status' in l && 'durationMs' in l)) !== undefined, 10_000, `the access line of ${requestId}`);
    return line!;
  }

  it('an overloaded upstream and one that cannot be reached are 529 overloaded_error, the SDK’s OverloadedError, where OpenAI clients get 503', async () => {
    for (const name of ['gpt-busy', 'gpt-gone']) {
      const error = await client.messages.create(hello(name)).catch((e) => e);
      expect(error, name).toBeInstanceOf(Anthropic.OverloadedError);
      expect(error.status).toBe(529);
      expect(error.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
      expect(error.headers.get('retry-after')).toBeTruthy();
      // A stream asked for fails the same way before it starts.
      const streamed = await client.messages.stream(hello(name)).finalMessage().catch((e) => e);
      expect(streamed, name).toBeInstanceOf(Anthropic.OverloadedError);
    }
    const openai = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-busy', messages: [{ role: 'user', content: 'hi' }] } });
    expectErrorShape(openai, 503, 'upstream_unavailable');
  });

  it('GET /v1/models asked with anthropic-version answers its errors in Anthropic envelope; without it, OpenAI’s', async () => {
    const bad = new Anthropic({ baseURL: gw.url, apiKey: 'tg_sk_notarealkey0000000000000000000000', maxRetries: 0 });
    const unauthenticated = await bad.models.list().catch((e) => e);
    expect(unauthenticated).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(unauthenticated.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const missing = await client.models.retrieve('no-such-model').catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(missing.error.error.message).toMatch(/no-such-model/);
    expectErrorShape(await raw(gw, 'GET', '/v1/models', { key: 'tg_sk_notarealkey0000000000000000000000' }), 401);
    expectErrorShape(await raw(gw, 'GET', '/v1/models/no-such-model', { key: key.key }), 404, 'model_not_found');
  });

  it('a plan’s request limit is 429 rate_limit_error, the SDK’s RateLimitError, with its access line and metrics', async () => {
    const limited = new Anthropic({ baseURL: gw.url, apiKey: tight.key, maxRetries: 0 });
    await limited.messages.create(hello('service-test'));
    const error = await limited.messages.create(hello('service-test')).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(Number(error.headers.get('retry-after'))).toBeGreaterThan(0);
    // Refused by the route once it read the model, as chat is: the access line and the metrics name both.
    const line = await accessLine(error.headers.get('x-service-request-id'));
    expect(line).toMatchObject({ route: '/v1/messages', model: 'service-test', status: 429, account: 'tight-co' });
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    expect(text).toContain('tollgate_http_requests_total{route="/v1/messages",method="POST",status="429",code="rate_limit_exceeded"} 1');
    expect(text).toMatch(/^gen_ai_server_request_duration_seconds_count\{gen_ai_operation_name="chat",[^}]*gen_ai_request_model="service-test",[^}]*error_type="rate_limit_exceeded"\} 1$/m);
  });

  it('a plan’s token limit holds the Messages API’s reservation as it holds chat’s: a request that can never fit is refused before it runs', async () => {
    const small = new Anthropic({ baseURL: gw.url, apiKey: tokens.key, maxRetries: 0 });
    const error = await small.messages.create({ ...hello('service-test'), max_tokens: 4000 }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(error.error.error.message).toMatch(/can never be admitted/);
    const fits = await small.messages.create({ ...hello('service-test'), max_tokens: 20 });
    expect(fits.type).toBe('message');
  });
});
