// A Messages stream relayed to Anthropic is held until its first content (ADR 37), as a translated
// one is: Anthropic may answer 200, send message_start, and then `overloaded_error` as an event. Two
// Anthropic fakes (two keys: two accounts, or two regions) are the targets of one model. An overload,
// an error or a cut before content moves on to the second target, and the client (the official SDK,
// and raw HTTP comparing bytes) sees the second stream whole, byte for byte as that fake wrote it,
// with nothing of the first. After content, an overload is Anthropic's in-band error event, relayed
// as it was written. The breaker counts a failure before content like a 529, and the hold lasts no
// longer than the upstream's firstByteMs.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const key = newKey('k', 'acme');

let first: FakeAnthropic;
let second: FakeAnthropic;

const upstream = (name: string, fake: () => FakeAnthropic, env: string, timeouts?: Record<string, number>) => ({
  apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { provider: 'anthropic', baseURL: fake().url, credentials: { env }, ...(timeouts ? { timeouts } : {}) },
});
const manifests = () => [
  upstream('anthropic-one', () => first, 'HOLD_ANTHROPIC_ONE'),
  upstream('anthropic-two', () => second, 'HOLD_ANTHROPIC_TWO'),
  upstream('anthropic-one-quick', () => first, 'HOLD_ANTHROPIC_ONE', { firstByteMs: 2000 }),
  model('claude-sonnet-4-6', [{ upstream: 'anthropic-one', priority: 0 }, { upstream: 'anthropic-two', priority: 1 }]),
  model('claude-haiku-4-5', [{ upstream: 'anthropic-one-quick', priority: 0 }, { upstream: 'anthropic-two', priority: 1 }]),
  plan('pro', ['claude-*']),
  account('acme', 'pro'),
  apiKey(key),
];

beforeAll(async () => {
  first = await startFakeAnthropic();
  second = await startFakeAnthropic();
  process.env.HOLD_ANTHROPIC_ONE = first.apiKey;
  process.env.HOLD_ANTHROPIC_TWO = second.apiKey;
});
afterAll(async () => {
  await first?.close();
  await second?.close();
});

const headers = { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const streamBody = (text: string, model = 'claude-sonnet-4-6') => JSON.stringify({ model, max_tokens: 64, stream: true, messages: [{ role: 'user', content: text }] });
const answered = (fake: FakeAnthropic) => Buffer.concat(fake.requests.at(-1)!.answered);

describe('a relayed Messages stream, held until its first content', () => {
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    // A breaker that never opens here: each test's failures are its own.
    gw = await startTestGateway(manifests(), { breaker: { threshold: 1000, cooldownMs: 1000 } });
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
  });
  beforeEach(() => {
    first.requests.length = 0;
    second.requests.length = 0;
  });

  it("an overload event right after message_start: the SDK gets the second target's stream, whole", async () => {
    first.next({ streamErrorAfter: 1, errorType: 'overloaded_error', message: 'Overloaded' });
    const events: string[] = [];
    const stream = client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'hello after an overload' }] });
    stream.on('streamEvent', (event) => events.push(event.type));
    const message = await stream.finalMessage();
    expect((message.content[0] as Anthropic.TextBlock).text).toBe('You said: hello after an overload');
    expect(message.stop_reason).toBe('end_turn');
    // One message, the second fake's: its id, one message_start.
    expect(message.id).toBe(JSON.parse(/data: (.*)/.exec(answered(second).toString())![1]!).message.id);
    expect(events.filter((e) => e === 'message_start')).toHaveLength(1);
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    // Each target got the request with its own key.
    expect(first.requests[0]!.headers['x-api-key']).toBe(first.apiKey);
    expect(second.requests[0]!.headers['x-api-key']).toBe(second.apiKey);
  });

  it('the bytes the client gets are the bytes the second target wrote, byte by byte, none of the first', async () => {
    first.next({ streamErrorAfter: 2, errorType: 'overloaded_error', message: 'Overloaded' });
    second.next({ byteByByte: true });
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body: streamBody('bytes after an overload') });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const got = Buffer.from(await response.arrayBuffer());
    const wrote = answered(second);
    expect(second.requests.at(-1)!.answered.length).toBe(wrote.length);
    expect(got.equals(wrote)).toBe(true);
    expect(got.toString()).not.toContain('Overloaded');
    expect(parseAnthropicStream(got.toString()).blocks[0].text).toBe('You said: bytes after an overload');
  });

  it('a held stream that is not failed is relayed byte-exact too (the opening held, then the rest)', async () => {
    first.next({ byteByByte: true });
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body: streamBody('a plain stream') });
    const got = Buffer.from(await response.arrayBuffer());
    expect(got.equals(answered(first))).toBe(true);
    expect(second.requests).toHaveLength(0);
  });

  it('a stream cut, or an api_error event, before content moves on to the second target', async () => {
    for (const script of [{ cutAfter: 1 }, { cutAfter: 2 }, { streamErrorAfter: 1, errorType: 'api_error', message: 'Internal server error' }]) {
      first.next(script);
      const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body: streamBody('after a broken opening') });
      const got = Buffer.from(await response.arrayBuffer());
      expect(got.equals(answered(second)), JSON.stringify(script)).toBe(true);
    }
    expect(first.requests).toHaveLength(3);
    expect(second.requests).toHaveLength(3);
  });

  it("an overload after content is Anthropic's in-band error event, as it was written; the second target is not asked", async () => {
    // message_start, ping, content_block_start, a text delta: then the overload.
    first.next({ streamErrorAfter: 4, errorType: 'overloaded_error', message: 'Overloaded' });
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body: streamBody('overload after content') });
    expect(response.status).toBe(200);
    const got = Buffer.from(await response.arrayBuffer());
    expect(got.equals(answered(first))).toBe(true);
    expect(got.toString()).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error","message":"Overloaded"\}\}\n\n$/);

    first.next({ streamErrorAfter: 4, errorType: 'overloaded_error', message: 'Overloaded' });
    const texts: string[] = [];
    const stream = client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'overload after content' }] });
    stream.on('text', (text) => texts.push(text));
    const error = await stream.finalMessage().catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.message).toMatch(/overloaded_error/);
    expect(texts.join('')).not.toBe('');
    expect(second.requests).toHaveLength(0);
  });

  it("every target overloaded before content: Anthropic's 529 overloaded_error, which the SDK raises as such", async () => {
    first.next({ streamErrorAfter: 1 });
    second.next({ streamErrorAfter: 2 });
    const error = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'nobody answers' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(error.status).toBe(529);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(error.error.error.message).not.toContain(first.apiKey);
  });

  it('an invalid_request_error event before content is the client’s error: a 400, no fallback', async () => {
    first.next({ streamErrorAfter: 1, errorType: 'invalid_request_error', message: 'Bad input' });
    const error = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'bad' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error.error.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('Bad input') });
    expect(second.requests).toHaveLength(0);
  });

  it("the hold ends at the upstream's firstByteMs: a stream silent after its opening starts anyway, and goes on byte-exact", async () => {
    let resume!: () => void;
    first.next({ pauseAfter: 2, resume: new Promise<void>((resolve) => (resume = resolve)) });
    // The headers come while the fake is still silent (firstByteMs 2 s): the hold did not wait for content.
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body: streamBody('slow to start', 'claude-haiku-4-5') });
    expect(response.status).toBe(200);
    resume();
    const got = Buffer.from(await response.arrayBuffer());
    expect(got.equals(answered(first))).toBe(true);
    expect(second.requests).toHaveLength(0);
  });
});

describe('the breaker and a relayed stream that fails before content', () => {
  it('counts the failure against the upstream like a 529: with a threshold of one, the next request skips it', async () => {
    const gw = await startTestGateway(manifests(), { breaker: { threshold: 1, cooldownMs: 60_000 } });
    try {
      first.requests.length = 0;
      second.requests.length = 0;
      first.next({ streamErrorAfter: 1 });
      const client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
      await client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'one' }] }).finalMessage();
      await client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'two' }] }).finalMessage();
      expect(first.requests).toHaveLength(1);
      expect(second.requests).toHaveLength(2);
    } finally {
      await gw.stop();
    }
  });
});
