// The Messages API stream translated from an OpenAI-compatible upstream, driven by the Anthropic SDK
// and raw HTTP: message_start and pings while the model is still silent before its first token,
// parallel tool calls whose fragments the upstream interleaves (none lost), a turn cut by max_tokens,
// and an upstream that breaks off mid-stream (an `error` event, no message_stop).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
const key = newKey('k', 'acme');
const PING_MS = 40;

type Delta = Record<string, unknown>;
const chunk = (delta: Delta, finish: string | null = null) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish }] });
const call = (index: number, args: string, head?: { id: string; name: string }) => chunk({ tool_calls: [{ index, ...(head ? { id: head.id, type: 'function' } : {}), function: { ...(head ? { name: head.name } : {}), arguments: args } }] });

// Two parallel calls whose argument fragments alternate, and text between them: what other gateways
// lost at the block switch.
const INTERLEAVED = [
  chunk({ role: 'assistant', content: 'Checking both. ' }),
  call(0, '', { id: 'call_weather', name: 'get_weather' }),
  call(1, '{"zone":', { id: 'call_time', name: 'get_time' }),
  call(0, '{"city":'),
  chunk({ content: 'One moment. ' }),
  call(1, '"Europe/Oslo"}'),
  call(0, '"Oslo"}'),
  chunk({}, 'tool_calls'),
];

/** An OpenAI chat stream of these chunks; the first waits for `before` (a model thinking), the usage chunk comes last. */
function streamOf(chunks: object[], before: Promise<void> = Promise.resolve()) {
  return async (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    await before;
    for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.write(`data: ${JSON.stringify({ ...chunk({}), choices: [], usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

const TOOLS: Anthropic.Tool[] = [
  { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
  { name: 'get_time', input_schema: { type: 'object', properties: { zone: { type: 'string' } } } },
];
const ask = (extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {}): Anthropic.MessageCreateParamsNonStreaming => ({ model: 'gpt-think', max_tokens: 200, messages: [{ role: 'user' as const, content: 'Weather and time in Oslo?' }], ...extra });

/** Reads a response body as text until `enough` holds for what arrived (no timer: each read waits for bytes). */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, sofar: { text: string }, enough: (text: string) => boolean): Promise<void> {
  const decoder = new TextDecoder();
  while (!enough(sofar.text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before the expected events: ${sofar.text}`);
    sofar.text += decoder.decode(value, { stream: true });
  }
}

const count = (text: string, event: string) => text.split(`event: ${event}\n`).length - 1;

describe('the Messages API stream translated from an OpenAI-compatible upstream', () => {
  let fake: FakeUpstream;
  // Pings far apart: only the stream's start can bring message_start before the upstream's first chunk.
  let gw: TestGateway;
  // Pings every PING_MS of silence.
  let pinging: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    fake = await startFakeUpstream('think');
    const manifests = [upstream('think', fake.url), model('gpt-think', [{ upstream: 'think', model: 'fake-model' }]), plan('pro', ['gpt-think']), account('acme', 'pro'), apiKey(key)];
    gw = await startTestGateway(manifests, { streamPingMs: 600_000 });
    pinging = await startTestGateway(manifests, { streamPingMs: PING_MS });
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await pinging?.stop();
    await fake?.close();
  });

  const post = (body: object, on = gw) => fetch(`${on.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('pings while the upstream holds its first chunk, after message_start, then gives the answer', async () => {
    let release!: () => void;
    fake.behave({ respond: streamOf([chunk({ role: 'assistant', content: 'Thought it through.' }), chunk({}, 'stop')], new Promise<void>((resolve) => (release = resolve))) });
    const response = await post({ ...ask(), stream: true }, pinging);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const sofar = { text: '' };
    await readUntil(reader, sofar, (text) => count(text, 'ping') >= 2);
    // Nothing of the answer yet: the upstream has not sent a chunk.
    expect(sofar.text.startsWith('event: message_start\n')).toBe(true);
    expect(count(sofar.text, 'message_start')).toBe(1);
    expect(count(sofar.text, 'content_block_start')).toBe(0);
    release();
    await readUntil(reader, sofar, (text) => text.includes('event: message_stop\n'));
    const parsed = parseAnthropicStream(sofar.text);
    expect(parsed.blocks).toEqual([{ type: 'text', text: 'Thought it through.' }]);
    expect(parsed.stopReason).toBe('end_turn');
    expect(parsed.usage).toMatchObject({ input_tokens: 20, output_tokens: 9 });
  });

  // Without message_start at the stream's start this waits for a ping ten minutes away: the test's own timeout fails it.
  it('gives the SDK its message_start before the upstream has said anything', { timeout: 15_000 }, async () => {
    let release!: () => void;
    fake.behave({ respond: streamOf([chunk({ role: 'assistant', content: 'Later.' }), chunk({}, 'stop')], new Promise<void>((resolve) => (release = resolve))) });
    const stream = client.messages.stream(ask());
    const first = await new Promise<Anthropic.MessageStreamEvent>((resolve) => stream.once('streamEvent', resolve));
    expect(first.type).toBe('message_start');
    release();
    const final = await stream.finalMessage();
    expect(final.content.map((b) => (b.type === 'text' ? b.text : b.type))).toEqual(['Later.']);
  });

  it('the fake interleaves parallel tool calls as OpenAI may: the OpenAI SDK rebuilds them from it', async () => {
    fake.behave({ respond: streamOf(INTERLEAVED) });
    const openai = new OpenAI({ baseURL: fake.url, apiKey: 'sk-test', maxRetries: 0 });
    const completion = await openai.chat.completions.stream({ model: 'fake-model', messages: [{ role: 'user', content: 'Weather and time in Oslo?' }] }).finalChatCompletion();
    const calls = completion.choices[0].message.tool_calls!.map((c) => (c.type === 'function' ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : null));
    expect(calls).toEqual([['call_weather', 'get_weather', { city: 'Oslo' }], ['call_time', 'get_time', { zone: 'Europe/Oslo' }]]);
  });

  it('loses no tool input when the upstream interleaves parallel tool calls: every block whole, in Anthropic shape', async () => {
    fake.behave({ respond: streamOf(INTERLEAVED) });
    const final = await client.messages.stream(ask({ tools: TOOLS })).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const tools = final.content.filter((b) => b.type === 'tool_use').map((b) => [b.id, b.name, b.input]);
    expect(tools).toEqual([['call_weather', 'get_weather', { city: 'Oslo' }], ['call_time', 'get_time', { zone: 'Europe/Oslo' }]]);
    const text = final.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    expect(text).toBe('Checking both. One moment. ');
    // The same bytes read raw: blocks one at a time, sequential indices, tool input that parses.
    fake.behave({ respond: streamOf(INTERLEAVED) });
    const parsed = parseAnthropicStream(await (await post({ ...ask({ tools: TOOLS }), stream: true })).text());
    expect(parsed.blocks.map((b) => b.type)).toEqual(['text', 'tool_use', 'tool_use', 'text']);
    expect(parsed.blocks.filter((b) => b.type === 'tool_use').map((b) => b.input)).toEqual([{ city: 'Oslo' }, { zone: 'Europe/Oslo' }]);
  });

  it('a turn cut by the output limit is max_tokens, as JSON and as a stream that still ends with message_delta and message_stop', async () => {
    fake.behave({ finishReason: 'length', chunks: 3 });
    const message = await client.messages.create(ask());
    expect(message.stop_reason).toBe('max_tokens');
    const parsed = parseAnthropicStream(await (await post({ ...ask(), stream: true })).text());
    expect(parsed.stopReason).toBe('max_tokens');
    expect(parsed.events.filter((e) => e.event !== 'ping').slice(-2).map((e) => e.event)).toEqual(['message_delta', 'message_stop']);
    const streamed = await client.messages.stream(ask()).finalMessage();
    expect(streamed.stop_reason).toBe('max_tokens');
  });

  it('service-test cut at max_tokens says max_tokens too, as JSON and stream', async () => {
    const request = { model: 'service-test', max_tokens: 3, messages: [{ role: 'user' as const, content: 'Tell me a long story about the sea and its ships' }] };
    const message = await client.messages.create(request);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
    const parsed = parseAnthropicStream(await (await post({ ...request, stream: true })).text());
    expect(parsed.stopReason).toBe('max_tokens');
    expect(parsed.blocks.map((b) => b.text)).toEqual(message.content.map((b) => (b.type === 'text' ? b.text : null)));
  });

  it('an upstream that breaks off mid-stream ends the stream with an error event, no message_stop, which the SDK raises', async () => {
    fake.behave({ chunks: 6, resetAfterChunks: 2 });
    const text = await (await post({ ...ask(), stream: true })).text();
    const kinds = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]).filter((k) => k !== 'ping');
    expect(kinds[0]).toBe('message_start');
    expect(kinds).toContain('content_block_delta');
    expect(kinds.at(-1)).toBe('error');
    expect(kinds).not.toContain('message_stop');
    const error = JSON.parse(text.trim().split('\n').at(-1)!.slice(6));
    expect(error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(error.error.message).toMatch(/upstream stream failed/);
    const failed = await client.messages.stream(ask()).finalMessage().catch((e) => e);
    expect(failed).toBeInstanceOf(Anthropic.APIError);
    expect(failed.error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });
});
