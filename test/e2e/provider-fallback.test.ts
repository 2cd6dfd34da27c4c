// Fallback across providers, end to end: a Model whose targets are Anthropic and Bedrock (each a
// strict fake: test/fakes/anthropic.ts, test/fakes/bedrock.ts), driven by the official openai SDK and
// raw HTTP. Overload before anything reached the client moves on to the next provider, whether the
// provider said so with its status (Anthropic's 529, Bedrock's ThrottlingException) or, as Anthropic
// does, with an `error` event right after a 200 (the response is held until the first content).
// Once content went out, a failure is the stream's in-band error. Timeouts and the breaker work on
// translated upstreams as on OpenAI-compatible ones.
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import { clearOtelEnv, exportTracesTo, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.ts';
import { tracingConfigFrom } from '../../gateway/src/telemetry/tracing.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE_ON_AWS = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
process.env.FALLBACK_BEDROCK_KEY_ID = FAKE_ACCESS_KEY;
process.env.FALLBACK_BEDROCK_SECRET = FAKE_SECRET_KEY;
const key = newKey('k', 'acme');

let anthropic: FakeAnthropic;
let bedrock: FakeBedrock;

const anthropicUpstream = (name: string, timeouts?: Record<string, number>) => ({
  apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'FALLBACK_ANTHROPIC_KEY' }, ...(timeouts ? { timeouts } : {}) },
});
const bedrockUpstream = (name: string) => ({
  apiVersion: API, kind: 'Upstream', metadata: { name },
  spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'FALLBACK_BEDROCK_KEY_ID' }, secretAccessKey: { env: 'FALLBACK_BEDROCK_SECRET' } } },
});
/** Both providers, and Models over them in either order. */
const manifests = () => [
  anthropicUpstream('anthropic'),
  anthropicUpstream('anthropic-slow', { firstByteMs: 400, idleMs: 400 }),
  bedrockUpstream('aws'),
  model('claude', [{ upstream: 'anthropic', model: 'claude-sonnet-4-5', priority: 0 }, { upstream: 'aws', model: CLAUDE_ON_AWS, priority: 1 }]),
  model('claude-aws-first', [{ upstream: 'aws', model: CLAUDE_ON_AWS, priority: 0 }, { upstream: 'anthropic', model: 'claude-sonnet-4-5', priority: 1 }]),
  model('claude-only', [{ upstream: 'anthropic', model: 'claude-sonnet-4-5' }]),
  model('claude-slow', [{ upstream: 'anthropic-slow', model: 'claude-sonnet-4-5', priority: 0 }, { upstream: 'aws', model: CLAUDE_ON_AWS, priority: 1 }]),
  plan('pro', ['claude*']),
  account('acme', 'pro'),
  apiKey(key),
];

beforeAll(async () => {
  anthropic = await startFakeAnthropic();
  bedrock = await startFakeBedrock();
  process.env.FALLBACK_ANTHROPIC_KEY = anthropic.apiKey;
});
afterAll(async () => {
  await anthropic?.close();
  await bedrock?.close();
});

const ask = (text: string) => [{ role: 'user' as const, content: text }];
/** The text of a stream the SDK read to its end, and the chunks' ids. */
async function readStream(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<{ text: string; ids: Set<string> }> {
  let text = '';
  const ids = new Set<string>();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  return { text, ids };
}
const BEDROCK_ID = /^chatcmpl-[0-9a-f-]{36}$/;
const ANTHROPIC_ID = /^chatcmpl-msg_fake/;

describe('fallback across providers', () => {
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    // A breaker that never opens here: each test's failures are its own.
    gw = await startTestGateway(manifests(), { breaker: { threshold: 1000, cooldownMs: 1000 } });
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
  });
  beforeEach(() => {
    anthropic.requests.length = 0;
    bedrock.requests.length = 0;
  });

  it('Anthropic overloaded (529) → Bedrock answers, JSON and stream, and the client cannot tell', async () => {
    anthropic.next({ status: 529 });
    const answer = await client.chat.completions.create({ model: 'claude', messages: ask('hello from json') });
    expect(answer.model).toBe('claude');
    expect(answer.id).toMatch(BEDROCK_ID);
    expect(answer.choices[0].message.content).toBe('You said: hello from json');
    expect(anthropic.requests).toHaveLength(1);
    expect(bedrock.requests.map((r) => [r.operation, r.modelId, r.refused])).toEqual([['converse', CLAUDE_ON_AWS, null]]);

    anthropic.next({ status: 529 });
    const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: ask('hello from a stream') });
    const { text, ids } = await readStream(stream);
    expect(text).toBe('You said: hello from a stream');
    expect([...ids]).toHaveLength(1);
    expect([...ids][0]).toMatch(BEDROCK_ID);
    expect(anthropic.requests).toHaveLength(2);
    expect(bedrock.requests.map((r) => r.operation)).toEqual(['converse', 'converse-stream']);
  });

  it('Bedrock throttled (ThrottlingException) or unavailable → Anthropic answers, JSON and stream', async () => {
    bedrock.next({ error: { status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' } });
    const answer = await client.chat.completions.create({ model: 'claude-aws-first', messages: ask('hello from json') });
    expect(answer.id).toMatch(ANTHROPIC_ID);
    expect(answer.choices[0].message.content).toBe('You said: hello from json');
    expect(anthropic.requests.at(-1)!.body).toMatchObject({ model: 'claude-sonnet-4-5' });

    bedrock.next({ error: { status: 503, type: 'ServiceUnavailableException', message: 'Bedrock is unable to process your request.' } });
    const stream = await client.chat.completions.create({ model: 'claude-aws-first', stream: true, messages: ask('hello from a stream') });
    const { text, ids } = await readStream(stream);
    expect(text).toBe('You said: hello from a stream');
    expect([...ids][0]).toMatch(ANTHROPIC_ID);
    expect(bedrock.requests).toHaveLength(2);
    expect(anthropic.requests).toHaveLength(2);
  });

  it('both overloaded: the last provider’s error, in OpenAI’s shape with Retry-After, the SDK’s own error class', async () => {
    bedrock.next({ error: { status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' } });
    anthropic.next({ status: 529 });
    const error = await client.chat.completions.create({ model: 'claude-aws-first', messages: ask('hi') }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error.status).toBe(503);
    expect(error.error).toMatchObject({ code: 'upstream_overloaded', type: 'server_error' });
    expect(error.headers.get('retry-after')).toBe('1');
  });

  it('an overloaded `error` event right after message_start is the attempt failing: Bedrock’s stream is what the client gets', async () => {
    anthropic.next({ streamErrorAfter: 1, errorType: 'overloaded_error', message: 'Overloaded' });
    const { data: stream, response } = await client.chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, messages: ask('hello after an overload') }).withResponse();
    const { text, ids } = await readStream(stream);
    expect(text).toBe('You said: hello after an overload');
    expect([...ids][0]).toMatch(BEDROCK_ID);
    expect(anthropic.requests).toHaveLength(1);
    expect(bedrock.requests.map((r) => r.operation)).toEqual(['converse-stream']);
    const id = response.headers.get('x-service-request-id');
    let line: Record<string, any> | undefined;
    await waitFor(() => (line = gw.logs.find((l) => l.requestId === id && 'durationMs' in l && 'attempts' in l)) !== undefined, 10_000, 'the access line');
    // The first attempt answered 200, then failed before its content.
    expect(line!.attempts.map((a: Record<string, unknown>) => [a.upstream, a.status, a.error])).toEqual([['anthropic', 200, 'upstream_overloaded'], ['aws', 200, undefined]]);
    expect(line!.streamError ?? null).toBeNull();
  });

  it('the same with Bedrock first: a throttling exception frame before any text falls back to Anthropic', async () => {
    bedrock.next({ streamException: { afterEvents: 1, type: 'throttlingException', message: 'Too many tokens, please wait before trying again.' } });
    const stream = await client.chat.completions.create({ model: 'claude-aws-first', stream: true, messages: ask('hello after throttling') });
    const { text, ids } = await readStream(stream);
    expect(text).toBe('You said: hello after throttling');
    expect([...ids][0]).toMatch(ANTHROPIC_ID);
    expect(bedrock.requests).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
  });

  it('the Vercel AI SDK and LangChain stream Bedrock’s answer after Anthropic’s in-stream overload, usage included', async () => {
    anthropic.next({ streamErrorAfter: 1 });
    const streamed = streamText({ model: createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.key }).chat('claude'), prompt: 'hello from the ai sdk' });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe('You said: hello from the ai sdk');
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);
    anthropic.next({ streamErrorAfter: 1 });
    const lc = new ChatOpenAI({ model: 'claude', apiKey: key.key, configuration: { baseURL: `${gw.url}/v1` }, maxRetries: 0 });
    let lcText = '';
    for await (const piece of await lc.stream('hello from langchain')) lcText += piece.content;
    expect(lcText).toBe('You said: hello from langchain');
    expect(anthropic.requests).toHaveLength(2);
    expect(bedrock.requests.map((r) => r.operation)).toEqual(['converse-stream', 'converse-stream']);
  });

  it('with no target left, an overload before content is an HTTP 503 with Retry-After, not an in-band error', async () => {
    anthropic.next({ streamErrorAfter: 1, errorType: 'overloaded_error', message: 'Overloaded' });
    const error = await client.chat.completions.create({ model: 'claude-only', stream: true, messages: ask('hi') }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error.status).toBe(503);
    expect(error.error).toMatchObject({ code: 'upstream_overloaded', type: 'server_error', message: 'Anthropic: Overloaded' });
    expect(error.headers.get('retry-after')).toBe('1');
    // A rate limit in the stream is a 429; an invalid request the client's own 400 (no fallback would help).
    anthropic.next({ streamErrorAfter: 1, errorType: 'rate_limit_error', message: 'Slow down' });
    const limited = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'claude-only', stream: true, messages: ask('hi') } });
    expectErrorShape(limited, 429, 'rate_limit_exceeded');
    anthropic.next({ streamErrorAfter: 1, errorType: 'invalid_request_error', message: 'Bad input' });
    const invalid = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'claude', stream: true, messages: ask('hi') } });
    expectErrorShape(invalid, 400, 'invalid_request_error');
    expect(bedrock.requests).toHaveLength(0);
  });

  it('once content reached the client, a failure is the in-band error the SDK raises, and nothing falls back', async () => {
    anthropic.next({ streamErrorAfter: 4, errorType: 'overloaded_error', message: 'Overloaded' });
    const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: ask('a longer answer please') });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    })().catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.message).toMatch(/Overloaded/);
    expect(text.length).toBeGreaterThan(0);
    expect(bedrock.requests).toHaveLength(0);
  });

  it('the hold is bounded by the upstream’s first-byte timeout: the stream starts without content, and a later overload is in-band', async () => {
    let resume!: () => void;
    // message_start and a ping, then silence until released, then the overload.
    anthropic.next({ pauseAfter: 2, resume: new Promise<void>((resolve) => (resume = resolve)), streamErrorAfter: 2, errorType: 'overloaded_error', message: 'Overloaded' });
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-slow', stream: true, messages: ask('hi') }),
    });
    // The headers came while Anthropic was still silent: the hold ran out (firstByteMs 400 ms) and the response began.
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    resume();
    const text = await response.text();
    expect(text).toContain('"role":"assistant"');
    expect(text).toContain('"code":"upstream_overloaded"');
    expect(text).not.toContain('[DONE]');
    expect(bedrock.requests).toHaveLength(0);
  });

  it('a translated stream stalled past the upstream’s idle timeout after content ends with an in-band error, never [DONE]', async () => {
    // message_start, ping, the text block's start and its first word, then silence.
    anthropic.next({ pauseAfter: 4 });
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'claude-slow', stream: true, messages: ask('a longer answer please') } });
    expect(response.status).toBe(200);
    expect(response.text).toMatch(/"content":"You said/);
    const last = response.text.trim().split('\n\n').at(-1)!;
    expect(JSON.parse(last.slice('data: '.length))).toMatchObject({ error: { code: 'upstream_idle_timeout', type: 'server_error' } });
    expect(response.text).not.toContain('[DONE]');
    expect(bedrock.requests).toHaveLength(0);
  });

  it('no answer from Anthropic within its first-byte timeout: Bedrock answers, JSON and stream', async () => {
    anthropic.next({ hang: true });
    const answer = await client.chat.completions.create({ model: 'claude-slow', messages: ask('hello, slowly') });
    expect(answer.id).toMatch(BEDROCK_ID);
    expect(answer.choices[0].message.content).toBe('You said: hello, slowly');
    anthropic.next({ hang: true });
    const stream = await client.chat.completions.create({ model: 'claude-slow', stream: true, messages: ask('hello, slowly') });
    expect((await readStream(stream)).text).toBe('You said: hello, slowly');
    expect(anthropic.requests).toHaveLength(2);
    expect(bedrock.requests.map((r) => r.operation)).toEqual(['converse', 'converse-stream']);
  });
});

describe('the circuit breaker on translated upstreams', () => {
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    // Upstreams of their own per case (the breaker counts per Upstream), over the same two fakes.
    gw = await startTestGateway(
      [
        anthropicUpstream('anthropic-1'),
        anthropicUpstream('anthropic-2'),
        anthropicUpstream('anthropic-3'),
        bedrockUpstream('aws-1'),
        bedrockUpstream('aws-2'),
        model('claude-status', [{ upstream: 'anthropic-1', model: 'claude-sonnet-4-5', priority: 0 }, { upstream: 'aws-1', model: CLAUDE_ON_AWS, priority: 1 }]),
        model('claude-in-stream', [{ upstream: 'anthropic-2', model: 'claude-sonnet-4-5', priority: 0 }, { upstream: 'aws-1', model: CLAUDE_ON_AWS, priority: 1 }]),
        model('claude-aws-first', [{ upstream: 'aws-2', model: CLAUDE_ON_AWS, priority: 0 }, { upstream: 'anthropic-3', model: 'claude-sonnet-4-5', priority: 1 }]),
        plan('pro', ['claude*']),
        account('acme', 'pro'),
        apiKey(key),
      ],
      { breaker: { threshold: 2, cooldownMs: 10 * 60_000 } },
    );
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
  });
  beforeEach(() => {
    anthropic.requests.length = 0;
    bedrock.requests.length = 0;
  });

  async function circuit(upstream: string): Promise<string | undefined> {
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    return new RegExp(`tollgate_upstream_circuit_state\\{[^}]*upstream="${upstream}"[^}]*state="(\\w+)"[^}]*\\} 1`).exec(text)?.[1];
  }

  it('opens after repeated 529s from Anthropic: the next request goes straight to Bedrock', async () => {
    anthropic.next({ status: 529 });
    anthropic.next({ status: 529 });
    for (let i = 0; i < 2; i++) expect((await client.chat.completions.create({ model: 'claude-status', messages: ask('hi') })).id).toMatch(BEDROCK_ID);
    expect(anthropic.requests).toHaveLength(2);
    expect(await circuit('anthropic-1')).toBe('open');
    const answer = await client.chat.completions.create({ model: 'claude-status', stream: true, messages: ask('straight to bedrock') });
    expect((await readStream(answer)).text).toBe('You said: straight to bedrock');
    expect(anthropic.requests).toHaveLength(2);
    expect(bedrock.requests).toHaveLength(3);
  });

  it('opens after repeated overloads inside 200 streams (before their content) as it does for statuses', async () => {
    anthropic.next({ streamErrorAfter: 1 });
    anthropic.next({ streamErrorAfter: 1 });
    for (let i = 0; i < 2; i++) {
      const stream = await client.chat.completions.create({ model: 'claude-in-stream', stream: true, messages: ask('hi') });
      expect([...(await readStream(stream)).ids][0]).toMatch(BEDROCK_ID);
    }
    expect(await circuit('anthropic-2')).toBe('open');
    const stream = await client.chat.completions.create({ model: 'claude-in-stream', stream: true, messages: ask('hi') });
    expect([...(await readStream(stream)).ids][0]).toMatch(BEDROCK_ID);
    expect(anthropic.requests).toHaveLength(2);
    expect(await circuit('aws-1')).toBe('closed');
  });

  it('opens after repeated ServiceUnavailableExceptions from Bedrock: the next request goes straight to Anthropic', async () => {
    const unavailable = { error: { status: 503, type: 'ServiceUnavailableException', message: 'Bedrock is unable to process your request.' } };
    bedrock.next(unavailable, unavailable);
    for (let i = 0; i < 2; i++) expect((await client.chat.completions.create({ model: 'claude-aws-first', messages: ask('hi') })).id).toMatch(ANTHROPIC_ID);
    expect(await circuit('aws-2')).toBe('open');
    expect((await client.chat.completions.create({ model: 'claude-aws-first', messages: ask('hi') })).id).toMatch(ANTHROPIC_ID);
    expect(bedrock.requests).toHaveLength(2);
    expect(anthropic.requests).toHaveLength(3);
  });
});

describe('traces of a fallback after an overload inside the stream', () => {
  let gw: TestGateway;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    process.env.OTEL_TRACES_SAMPLER = 'always_on';
    gw = await startTestGateway(manifests(), { telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: tracingConfigFrom(process.env) } });
  });
  afterAll(async () => {
    await gw?.stop();
    await otlp?.close();
    clearOtelEnv();
  });

  it('the attempt that answered 200 and then failed is a client span of its own, ended, with its error', async () => {
    anthropic.next({ streamErrorAfter: 1 });
    const { data: stream, response } = await gw.client(key.key).chat.completions.create({ model: 'claude', stream: true, messages: ask('traced') }).withResponse();
    expect((await readStream(stream)).text).toBe('You said: traced');
    const requestId = response.headers.get('x-service-request-id');
    let server: (typeof otlp.spans)[number] | undefined;
    await waitFor(() => (server = otlp.spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId)) !== undefined, 10_000, 'the server span');
    await waitFor(() => otlp.spans.filter((s) => s.kind === 3 && s.traceId === server!.traceId).length === 2, 10_000, 'two client spans');
    const clients = otlp.spans.filter((s) => s.kind === 3 && s.traceId === server!.traceId);
    expect(clients.map((s) => s.attributes['error.type'] ?? null).sort()).toEqual(['upstream_overloaded', null].sort());
    expect(server!.events.find((e) => e.name === 'tollgate.fallback')?.attributes).toMatchObject({ 'tollgate.upstream': 'anthropic', 'tollgate.next_upstream': 'aws' });
  });
});
