import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

const SECRET = 'sk-upstream-secret-0123456789abcdef';
process.env.TEST_UPSTREAM_KEY = SECRET;
const key = newKey('k', 'acme');

async function until(condition: () => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('proxying chat completions to upstreams', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  const manifests = (targets: Parameters<typeof model>[1], extraUpstreams: unknown[] = []) => [
    upstream('a', a.url),
    upstream('b', b.url),
    ...extraUpstreams,
    model('gpt-4o', targets),
    plan('pro', ['gpt-4o']),
    account('acme', 'pro'),
    apiKey(key),
  ];

  beforeAll(async () => {
    a = await startFakeUpstream('a');
    b = await startFakeUpstream('b');
    gw = await startTestGateway(manifests([{ upstream: 'a', model: 'fake-model' }]), { breaker: { threshold: 3, cooldownMs: 60_000 } });
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw.stop();
    await a.close();
    await b.close();
  });
  afterEach(() => {
    a.behave({});
    b.behave({});
    a.requests.length = 0;
    b.requests.length = 0;
  });

  it('rewrites the model both ways, swaps the key for the upstream credential, and forwards the request id', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], temperature: 0.3, some_future_param: 'kept' } as never).withResponse();
    expect(data.model).toBe('gpt-4o');
    expect(data.choices[0].message.content).toBe('answer from a');
    const sent = a.requests[0];
    expect(JSON.parse(sent.body)).toMatchObject({ model: 'fake-model', temperature: 0.3, some_future_param: 'kept' });
    expect(sent.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
    expect(sent.headers['x-service-request-id']).toBe(response.headers.get('x-service-request-id'));
    expect(JSON.stringify(data)).not.toContain(SECRET);
  });

  it('logs the target, every attempt and the usage', async () => {
    const { response } = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    const id = response.headers.get('x-service-request-id');
    await until(() => gw.logs.some((l) => l.requestId === id));
    const line = gw.logs.find((l) => l.requestId === id)!;
    expect(line).toMatchObject({ upstream: 'a', inputTokens: 11, outputTokens: 7, status: 200 });
    expect(line.attempts).toEqual([expect.objectContaining({ upstream: 'a', status: 200 })]);
    expect(gw.logText()).not.toContain(SECRET);
  });

  it('relays a stream chunk by chunk, and hides the usage chunk the client did not ask for', async () => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(JSON.parse(a.requests[0].body).stream_options).toEqual({ include_usage: true });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('a-0 a-1 a-2 a-3 a-4 ');
    expect(chunks.every((c) => c.model === 'gpt-4o')).toBe(true);
    expect(chunks.some((c) => c.choices.length === 0)).toBe(false);
    const withUsage = client.chat.completions.stream({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
    expect((await withUsage.finalChatCompletion()).usage).toMatchObject({ completion_tokens: 5 });
  });

  it('sends each event as it arrives (no buffering) and aborts the upstream when the client leaves', async () => {
    a.behave({ chunks: 10, stallAfterChunks: 2 });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: controller.signal });
    const seen: string[] = [];
    for await (const chunk of stream) {
      seen.push(chunk.choices[0]?.delta.content ?? '');
      if (seen.join('').includes('a-1')) break; // the upstream will never finish: these arrived unbuffered
    }
    controller.abort();
    await until(() => a.aborted > 0);
    expect(seen.join('')).toBe('a-0 a-1 ');
  });

  it('falls back to the next priority on 5xx, 429 and connection errors, before anything is sent', async () => {
    await gw.writeManifests(manifests([{ upstream: 'dead', priority: 0 }, { upstream: 'a', priority: 1 }, { upstream: 'b', priority: 2 }], [upstream('dead', 'http://127.0.0.1:9/v1')]));
    a.behave({ status: 500 });
    expect((await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).choices[0].message.content).toBe('answer from b');
    a.behave({ status: 429 });
    expect((await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).choices[0].message.content).toBe('answer from b');
    expect(a.requests).toHaveLength(2);
    a.behave({});
    expect((await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })).choices[0].message.content).toBe('answer from a');
  });

  it('spreads load by weight within one priority', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a', weight: 3 }, { upstream: 'b', weight: 1 }]));
    for (let i = 0; i < 200; i++) await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(a.requests.length + b.requests.length).toBe(200);
    expect(a.requests.length).toBeGreaterThan(120);
    expect(a.requests.length).toBeLessThan(180);
  });

  it('relays an upstream 429 with its retry hints when no target is left', async () => {
    await gw.writeManifests(manifests([{ upstream: 'b' }]));
    b.behave({ status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '2' } });
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expectErrorShape(response, 429, 'rate_limit_exceeded');
    expect(response.json.error.type).toBe('rate_limit_error');
    expect(response.headers.get('retry-after-ms')).toBe('1500');
  });

  it('relays an upstream 400 in the OpenAI shape; an upstream 401 becomes 502 without the secret', async () => {
    await gw.writeManifests(manifests([{ upstream: 'b' }]));
    b.behave({ status: 400 });
    const bad = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expect(expectErrorShape(bad, 400).message).toBe('fake upstream says 400');
    b.behave({ status: 401 });
    const denied = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expectErrorShape(denied, 502, 'upstream_auth_failed');
    expect(denied.text).not.toContain(SECRET);
  });

  it('answers 504 when the first byte does not come in time, and 503 with Retry-After when every target failed', async () => {
    const slow = { ...upstream('slow', b.url), spec: { baseURL: b.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, timeouts: { firstByteMs: 200 } } };
    await gw.writeManifests(manifests([{ upstream: 'slow' }], [slow]));
    b.behave({ hang: true });
    expectErrorShape(await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } }), 504, 'upstream_timeout');
    b.behave({ status: 503 });
    const unavailable = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    expectErrorShape(unavailable, 503, 'upstream_unavailable');
    expect(Number(unavailable.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('ends a stream that fails midway with an error event the SDK raises', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a' }]));
    a.behave({ chunks: 6, resetAfterChunks: 3, chunkIntervalMs: 10 });
    const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String(error.message)).toContain('upstream stream failed');
    expect(seen.join('')).toBe('a-0 a-1 a-2 ');
  });

  it('ends a stream whose upstream goes silent for longer than the idle limit', async () => {
    const idle = { ...upstream('idle', a.url), spec: { baseURL: a.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, timeouts: { idleMs: 200 } } };
    await gw.writeManifests(manifests([{ upstream: 'idle' }], [idle]));
    a.behave({ chunks: 6, stallAfterChunks: 2 });
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] } });
    expect(response.text).toContain('"code":"upstream_idle_timeout"');
  });

  it('opens the circuit after repeated failures, then probes the target back in', async () => {
    await gw.stop();
    gw = await startTestGateway(manifests([{ upstream: 'a', priority: 0 }, { upstream: 'b', priority: 1 }]), { breaker: { threshold: 2, cooldownMs: 300 } });
    client = gw.client(key.key);
    a.behave({ status: 500 });
    for (let i = 0; i < 5; i++) await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(a.requests).toHaveLength(2);
    expect(b.requests).toHaveLength(5);
    a.behave({});
    // After the cooldown one probe goes to a; it succeeds and a is back in rotation.
    await until(() => {
      void client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      return a.requests.length > 2;
    }, 5000);
    const answer = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0].message.content).toBe('answer from a');
  });

  it('a missing upstream credential is a 502 that names the configuration problem', async () => {
    const nokey = { ...upstream('nokey', a.url, 'TOLLGATE_TEST_UNSET_VARIABLE') };
    await gw.writeManifests(manifests([{ upstream: 'nokey' }], [nokey]));
    expectErrorShape(await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } }), 502, 'upstream_credentials_missing');
  });
});

describe('proxying other JSON endpoints', () => {
  it('embeddings go to the upstream untouched but for the model name, and base64 (the SDK default) passes through', async () => {
    const fake = await startFakeUpstream('e');
    const gw = await startTestGateway([upstream('e', fake.url), model('text-embedding-3-small', [{ upstream: 'e', model: 'upstream-embed' }]), plan('pro', ['text-*']), account('acme', 'pro'), apiKey(key)]);
    try {
      const result = await gw.client(key.key).embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'float' });
      expect(result.data).toHaveLength(2);
      expect(result.model).toBe('text-embedding-3-small');
      expect(JSON.parse(fake.requests[0].body)).toEqual({ model: 'upstream-embed', input: ['a', 'b'], encoding_format: 'float' });
    } finally {
      await gw.stop();
      await fake.close();
    }
  });
});

describe('proxying the Responses API', () => {
  it('routes previous_response_id, retrieval and deletion back to the upstream that issued the id', async () => {
    const first = await startFakeUpstream('first');
    const second = await startFakeUpstream('second');
    const gw = await startTestGateway([upstream('first', first.url), upstream('second', second.url), model('gpt-4o', [{ upstream: 'first', priority: 0 }, { upstream: 'second', priority: 1 }]), plan('pro', ['gpt-4o']), account('acme', 'pro'), apiKey(key)]);
    try {
      const client = gw.client(key.key);
      const created = await client.responses.create({ model: 'gpt-4o', input: 'hello' });
      expect(created.id).toMatch(/^resp_first_/);
      expect(created.output_text).toBe('answer from first');
      // The preferred target now fails: a continuation must still go to the upstream that knows the id.
      first.behave({ status: 500 });
      const continued = await raw(gw, 'POST', '/v1/responses', { key: key.key, body: { model: 'gpt-4o', input: 'more', previous_response_id: created.id } });
      expectErrorShape(continued, 503, 'upstream_unavailable');
      expect(second.requests).toHaveLength(0);
      first.behave({});
      const ok = await client.responses.create({ model: 'gpt-4o', input: 'more', previous_response_id: created.id });
      expect(ok.output_text).toBe('answer from first');
      expect(JSON.parse(first.requests.at(-1)!.body).previous_response_id).toBe(created.id);
      const fetched = await raw(gw, 'GET', `/v1/responses/${created.id}`, { key: key.key });
      expect(fetched.status).toBe(200);
      expect(first.requests.at(-1)!.path).toBe(`/v1/responses/${created.id}`);
      const unknown = await raw(gw, 'POST', '/v1/responses', { key: key.key, body: { model: 'gpt-4o', input: 'x', previous_response_id: 'resp_unknown' } });
      expect(expectErrorShape(unknown, 400, 'previous_response_not_found').param).toBe('previous_response_id');
    } finally {
      await gw.stop();
      await first.close();
      await second.close();
    }
  });
});

describe('proxying binary and long-running answers', () => {
  it('streams audio speech bytes through with their content type, and image generations as JSON', async () => {
    const fake = await startFakeUpstream('media', { binaryBytes: 3 * 1024 * 1024 + 17 });
    const gw = await startTestGateway([upstream('media', fake.url), model('tts-1', [{ upstream: 'media' }]), model('gpt-image-1', [{ upstream: 'media' }]), plan('pro', ['tts-1', 'gpt-image-1']), account('acme', 'pro'), apiKey(key)]);
    try {
      const client = gw.client(key.key);
      const speech = await client.audio.speech.create({ model: 'tts-1', input: 'hello', voice: 'alloy' });
      expect(speech.headers.get('content-type')).toBe('audio/mpeg');
      expect((await speech.arrayBuffer()).byteLength).toBe(3 * 1024 * 1024 + 17);
      const image = await raw(gw, 'POST', '/v1/images/generations', { key: key.key, body: { model: 'gpt-image-1', prompt: 'a cat' } });
      expect(image.status).toBe(200);
      expect(fake.requests.at(-1)!.path).toBe('/v1/images/generations');
    } finally {
      await gw.stop();
      await fake.close();
    }
  });
});
