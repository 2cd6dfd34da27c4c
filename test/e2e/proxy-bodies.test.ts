// Request bodies on their way upstream: forwarded as the bytes the client sent, or with only the
// top-level members the gateway changes (model per target, stream_options, an output cap) spliced
// in; and the per-attempt total timeout and client-gone aborts that travel with them.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret-bodies-0123456789';
const key = newKey('k', 'acme');
const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

async function until(condition: () => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A chat request with an image of about `bytes` bytes as a Data URL, as the SDK would send it. */
function visionRequest(model: string, bytes: number) {
  const data = randomBytes(Math.floor((bytes * 3) / 4)).toString('base64');
  return {
    model,
    messages: [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'What is in this image? Answer "briefly" — in a word. \\ ü 😀' },
          { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${data}` } },
        ],
      },
    ],
  };
}

interface Received {
  bytes: number;
  sha256: string;
}

/**
 * A chat upstream for bodies past the shared fake's 1 MB record: it hashes every byte it receives,
 * then parses the whole body and answers as JSON or as a stream (with the usage chunk when asked).
 */
async function startBigBodyUpstream() {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) {
      hash.update(chunk);
      chunks.push(chunk);
    }
    const body = Buffer.concat(chunks);
    received.push({ bytes: body.length, sha256: hash.digest('hex') });
    const json = JSON.parse(body.toString('utf8'));
    const base = { id: 'chatcmpl-big', created: 1, model: json.model };
    const usage = { prompt_tokens: 800, completion_tokens: 2, total_tokens: 802 };
    if (!json.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: `seen ${body.length} bytes`, refusal: null }, logprobs: null, finish_reason: 'stop' }], usage }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
    event({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: `seen ${body.length} bytes` }, finish_reason: null }] });
    event({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    if (json.stream_options?.include_usage) event({ ...base, object: 'chat.completion.chunk', choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An SDK client that also records the exact body text it sent. */
function recordingClient(gw: TestGateway, sent: string[]): OpenAI {
  return gw.client(key.key, {
    fetch: async (url: string | URL | Request, init?: RequestInit) => {
      if (typeof init?.body === 'string') sent.push(init.body);
      return fetch(url, init);
    },
  });
}

describe('request bodies forwarded upstream', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  const sent: string[] = [];
  let client: OpenAI;

  const manifests = (targets: Parameters<typeof model>[1], limits?: Record<string, number>, extraUpstreams: unknown[] = []) => [
    upstream('a', a.url),
    upstream('b', b.url),
    ...extraUpstreams,
    model('gpt-4o', targets),
    plan('pro', ['gpt-4o'], limits),
    account('acme', 'pro'),
    apiKey(key),
  ];

  beforeAll(async () => {
    a = await startFakeUpstream('a');
    b = await startFakeUpstream('b');
    gw = await startTestGateway(manifests([{ upstream: 'a' }]));
    client = recordingClient(gw, sent);
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
    sent.length = 0;
  });

  it('sends the bytes the SDK sent, unchanged, when the upstream knows the model by the same name', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a' }]));
    const answer = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Say "hi" — ü 😀 \\ done' }], temperature: 0.5, some_future_param: { nested: [1, 2] } } as never);
    expect(answer.choices[0].message.content).toBe('answer from a');
    expect(sent).toHaveLength(1);
    expect(a.requests[0].body).toBe(sent[0]);
    expect(a.requests[0].sha256).toBe(sha256(sent[0]));
    expect(Number(a.requests[0].headers['content-length'])).toBe(Buffer.byteLength(sent[0]));
  });

  it('sends exactly the client bytes of a raw request, whitespace and key order included', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a' }]));
    const text = '{\n  "messages" : [ { "role": "user", "content": "x\\"y\\\\z \\u00e9" } ],\n\t"model":"gpt-4o" ,"n": 1 }\n';
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: text });
    expect(response.status).toBe(200);
    expect(a.requests[0].body).toBe(text);
  });

  it('renames the model for a target that knows it by another name, and leaves the rest as sent', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a', model: 'upstream-model-a' }]));
    const request = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'hi' }], temperature: 0.25, top_p: 1 };
    const answer = await client.chat.completions.create(request);
    expect(answer.model).toBe('gpt-4o');
    expect(JSON.parse(a.requests[0].body)).toEqual({ ...JSON.parse(sent[0]), model: 'upstream-model-a' });
  });

  it('forwards a 5 MB image intact, byte for byte', async () => {
    const big = await startBigBodyUpstream();
    try {
      await gw.writeManifests(manifests([{ upstream: 'big' }], undefined, [upstream('big', big.url)]));
      const answer = await client.chat.completions.create(visionRequest('gpt-4o', 5 * 1024 * 1024));
      const bytes = Buffer.byteLength(sent[0]);
      expect(bytes).toBeGreaterThan(5 * 1024 * 1024);
      expect(answer.choices[0].message.content).toBe(`seen ${bytes} bytes`);
      expect(big.received).toEqual([{ bytes, sha256: sha256(sent[0]) }]);
    } finally {
      await big.close();
    }
  });

  it('streams a 5 MB image request to a renamed model: model and stream_options spliced in, every other byte as sent', async () => {
    const big = await startBigBodyUpstream();
    try {
      await gw.writeManifests(manifests([{ upstream: 'big', model: 'upstream-vision' }], undefined, [upstream('big', big.url)]));
      const stream = await client.chat.completions.create({ ...visionRequest('gpt-4o', 5 * 1024 * 1024), stream: true });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      // The SDK writes compact JSON: a splice of the model in place and of stream_options at the end
      // is exactly what JSON.stringify of the edited object gives.
      const expected = JSON.stringify({ ...JSON.parse(sent[0]), model: 'upstream-vision', stream_options: { include_usage: true } });
      expect(big.received).toEqual([{ bytes: Buffer.byteLength(expected), sha256: sha256(expected) }]);
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(`seen ${Buffer.byteLength(expected)} bytes`);
      expect(chunks.every((c) => c.model === 'gpt-4o')).toBe(true);
      // The client did not ask for usage: the chunk the gateway asked for is not relayed.
      expect(chunks.some((c) => c.choices.length === 0)).toBe(false);
    } finally {
      await big.close();
    }
  });

  it('falls back to a second target with the bytes renamed for it, not for the first', async () => {
    await gw.writeManifests(manifests([
      { upstream: 'a', model: 'model-at-a', priority: 0 },
      { upstream: 'b', model: 'model-at-b', priority: 1 },
    ]));
    a.behave({ status: 500 });
    const answer = await client.chat.completions.create(visionRequest('gpt-4o', 64 * 1024));
    expect(answer.choices[0].message.content).toBe('answer from b');
    const original = JSON.parse(sent[0]);
    for (const [fake, name] of [[a, 'model-at-a'], [b, 'model-at-b']] as const) {
      const expected = JSON.stringify({ ...original, model: name });
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].sha256).toBe(sha256(expected));
      expect(Number(fake.requests[0].headers['content-length'])).toBe(Buffer.byteLength(expected));
    }
  });

  it('forwards the output cap a nearly spent monthly budget writes into the body', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a' }], { tokensPerMonth: 1000 }));
    const answer = await client.chat.completions.create(visionRequest('gpt-4o', 200 * 1024));
    expect(answer.choices[0].message.content).toBe('answer from a');
    const received = JSON.parse(a.requests[0].body);
    expect(received.max_completion_tokens).toBeGreaterThan(0);
    expect(received.max_completion_tokens).toBeLessThan(1000);
    expect(a.requests[0].sha256).toBe(sha256(JSON.stringify({ ...JSON.parse(sent[0]), max_completion_tokens: received.max_completion_tokens })));
  });

  it('a key the client repeats reaches the upstream once, with the value the gateway read', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a' }]));
    const text = '{"model":"gpt-4o","temperature":0.1,"messages":[{"role":"user","content":"first","content":"second"}],"temperature":0.9}';
    expect((await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: text })).status).toBe(200);
    const body = a.requests[0].body;
    expect(body.match(/"temperature"/g)).toHaveLength(1);
    expect(body).not.toContain('first');
    expect(JSON.parse(body)).toEqual({ model: 'gpt-4o', temperature: 0.9, messages: [{ role: 'user', content: 'second' }] });
  });
});

describe('the total time of an attempt, and a client that leaves', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;

  const timed = (name: string, url: string, timeouts: Record<string, number>) => {
    const resource = upstream(name, url);
    return { ...resource, spec: { ...resource.spec, timeouts } };
  };
  const manifests = (targets: Parameters<typeof model>[1], upstreams: unknown[]) => [...upstreams, model('gpt-4o', targets), plan('pro', ['gpt-4o']), account('acme', 'pro'), apiKey(key)];
  const hi = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'hi' }] };

  beforeAll(async () => {
    a = await startFakeUpstream('a');
    b = await startFakeUpstream('b');
    gw = await startTestGateway(manifests([{ upstream: 'a' }], [upstream('a', a.url)]));
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

  it('a target past its total time is a timeout, and the next target still gets its own full attempt', async () => {
    await gw.writeManifests(manifests([{ upstream: 'slow', priority: 0 }, { upstream: 'b', priority: 1 }], [timed('slow', a.url, { totalMs: 300 }), timed('b', b.url, { totalMs: 2000 })]));
    a.behave({ hang: true });
    b.behave({ delayMs: 500 });
    const abortedBefore = a.aborted;
    const started = Date.now();
    const answer = await gw.client(key.key).chat.completions.create(hi);
    expect(answer.choices[0].message.content).toBe('answer from b');
    expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    await until(() => a.aborted === abortedBefore + 1);

    await gw.writeManifests(manifests([{ upstream: 'slow' }], [timed('slow', a.url, { totalMs: 300 })]));
    expectErrorShape(await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: hi }), 504, 'upstream_timeout');
  });

  // Issue 10, defect 6: the total time used to cut a stream that was still making progress. A stream
  // is bounded by the time to its headers and the pause between chunks (idleMs), not by a total.
  it('the total time does not cut a stream that keeps making progress; a pause past idleMs does', async () => {
    await gw.writeManifests(manifests([{ upstream: 'slow' }], [timed('slow', a.url, { totalMs: 400, idleMs: 1000 })]));
    a.behave({ chunks: 25, chunkIntervalMs: 40 });
    const abortedBefore = a.aborted;
    const started = Date.now();
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { ...hi, stream: true } });
    expect(Date.now() - started).toBeGreaterThan(400);
    expect(response.text).toContain('a-24');
    expect(response.text).toContain('[DONE]');
    expect(a.aborted).toBe(abortedBefore);

    await gw.writeManifests(manifests([{ upstream: 'slow' }], [timed('slow', a.url, { totalMs: 60_000, idleMs: 300 })]));
    a.behave({ chunks: 25, chunkIntervalMs: 40, stallAfterChunks: 3 });
    const stalled = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { ...hi, stream: true } });
    expect(stalled.text).toContain('a-2');
    expect(stalled.text).toContain('"code":"upstream_idle_timeout"');
    await until(() => a.aborted === abortedBefore + 1);
  });

  it('a client that leaves while the upstream thinks aborts the upstream call, and no fallback starts', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a', priority: 0 }, { upstream: 'b', priority: 1 }], [upstream('a', a.url), upstream('b', b.url)]));
    a.behave({ hang: true });
    const abortedBefore = a.aborted;
    const controller = new AbortController();
    const pending = gw.client(key.key).chat.completions.create(hi, { signal: controller.signal }).catch((error: unknown) => error);
    await until(() => a.requests.length === 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => a.aborted === abortedBefore + 1);
    await until(() => gw.logs.some((line) => line.aborted === true && line.route === '/v1/chat/completions'));
    // Give a fallback the time it would need to start: it must not.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(b.requests).toHaveLength(0);
  });
});
