// The Anthropic translation against the strict fake, over real HTTP, without the gateway around it:
// what chatRequest builds (with the auth layer's header) is accepted by a server that refuses what
// Anthropic refuses, and what the fake answers, JSON or stream bytes as they arrive, comes back as
// OpenAI's. The gateway's own end-to-end tests (provider-anthropic.test.ts) drive the same paths
// through the SDKs.
import type { Upstream } from '@tollgate/crds';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderStreamError, type AnswerContext, type OpenAIBody } from '../../gateway/src/providers/provider.ts';
import { anthropic } from '../../gateway/src/providers/anthropic/index.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';

let fake: FakeAnthropic;
let upstream: Upstream;
const { translation, auth } = anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'claude' }, spec: { provider: 'anthropic', baseURL: fake.url, credentials: { env: 'FAKE_ANTHROPIC_KEY' } } } as Upstream;
});
afterAll(() => fake.close());

const ctx = (includeUsage = false): AnswerContext => ({ publicModel: 'claude', providerModel: 'claude-haiku-4-5', requestId: 'req-t', created: 1, includeUsage, responseHeaders: {} });

async function send(body: OpenAIBody, model = 'claude-haiku-4-5') {
  const stream = body.stream === true;
  const request = translation.chatRequest(body, { model, upstream }, stream);
  const url = new URL(request.path, fake.url);
  const headers = await auth.authorize(request, { upstream, url }, () => fake.apiKey, AbortSignal.timeout(5000));
  return fetch(url, { method: request.method, headers: { ...request.headers, ...headers }, body: request.body });
}

async function complete(body: OpenAIBody, model?: string) {
  const response = await send(body, model);
  const text = await response.text();
  if (response.status !== 200) return { error: translation.error(response.status, Object.fromEntries(response.headers), text) };
  return { answer: translation.chatResponse(JSON.parse(text), ctx()) as unknown as { choices: Array<{ message: Record<string, unknown>; finish_reason: string }>; usage: Record<string, unknown> } };
}

async function streamed(body: OpenAIBody, model?: string) {
  const response = await send({ ...body, stream: true }, model);
  expect(response.status).toBe(200);
  const translator = translation.chatStream(ctx(true));
  let out = '';
  for await (const chunk of response.body!) out += translator.feed(Buffer.from(chunk));
  out += translator.end();
  return { out, translator };
}

const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  { type: 'function', function: { name: 'get_time' } },
];

describe('Anthropic translation against the strict fake', () => {
  it('runs a tool loop to completion, the history accepted by the fake', async () => {
    const question = { role: 'user', content: 'call get_weather and get_time' };
    const first = await complete({ messages: [question], tools });
    const message = first.answer!.choices[0]!.message as { tool_calls: Array<{ id: string; function: { name: string; arguments: string } }> };
    expect(first.answer!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'call get_weather and get_time' }], ['get_time', {}]]);
    const results = message.tool_calls.map((c, i) => ({ role: 'tool', tool_call_id: c.id, content: `r${i}` }));
    const second = await complete({ messages: [question, message, ...results], tools });
    expect(second.answer!.choices[0]!.message.content).toBe('Tool results: r0; r1');
    // Without tools the history still passes, through the placeholder tool.
    const third = await complete({ messages: [question, message, ...results] });
    expect(third.answer!.choices[0]!.message.content).toBe('Tool results: r0; r1');
  });

  it('streams parallel tool calls with OpenAI indexes and usage', async () => {
    const { out, translator } = await streamed({ messages: [{ role: 'user', content: 'get_weather then get_time' }], tools });
    const chunks = out.split('\n\n').filter((f) => f.startsWith('data: {')).map((f) => JSON.parse(f.slice(6)));
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const args = [0, 1].map((k) => calls.filter((c: { index: number }) => c.index === k).map((c: { function: { arguments: string } }) => c.function.arguments).join(''));
    expect(args.map((a) => JSON.parse(a))).toEqual([{ city: 'get_weather then get_time' }, {}]);
    expect(translator.finishReason()).toBe('tool_calls');
    expect(chunks.at(-1).usage).toEqual(translator.usage());
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('sends images and structured output the fake accepts', async () => {
    const vision = await complete({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'image_url', image_url: { url: 'https://example.com/a.gif' } }] }] });
    expect(vision.answer!.choices[0]!.message.content).toBe('You said: what is it [images: image image/png base64, image url https://example.com/a.gif]');
    const schema = { type: 'object', properties: { city: { type: 'string' }, size: { type: 'integer' } }, required: ['city', 'size'], additionalProperties: false };
    const json = await complete({ messages: [{ role: 'user', content: 'Lyon' }], response_format: { type: 'json_schema', json_schema: { name: 'c', schema } } });
    expect(JSON.parse(String(json.answer!.choices[0]!.message.content))).toEqual({ city: 'Lyon', size: 4 });
  });

  it('returns thinking with its signature, which a client can send back on a tool continuation', async () => {
    const question = { role: 'user', content: 'get_time please' };
    const first = await complete({ messages: [question], tools, reasoning_effort: 'low' });
    const message = first.answer!.choices[0]!.message as { reasoning_content: string; thinking_blocks: unknown[]; tool_calls: Array<{ id: string }> };
    expect(message.reasoning_content).toBe('Thinking about: get_time please');
    const result = { role: 'tool', tool_call_id: message.tool_calls[0]!.id, content: 'noon' };
    // Sent back as returned: the fake verifies the signature and thinking stays on.
    const replayed = await complete({ messages: [question, message, result], tools, reasoning_effort: 'low' });
    expect(replayed.answer!.choices[0]!.message.reasoning_content).toMatch(/^Thinking about/);
    // Dropped by the client: continued without thinking instead of Anthropic's 400.
    const { thinking_blocks: _dropped, reasoning_content: _text, ...plain } = message;
    const continued = await complete({ messages: [question, plain, result], tools, reasoning_effort: 'low' });
    expect(continued.answer!.choices[0]!.message.content).toBe('Tool results: noon');
    expect(continued.answer!.choices[0]!.message.reasoning_content).toBeUndefined();
  });

  it('counts cached input inside prompt_tokens and truncation as length', async () => {
    fake.next({ cache: { read: 100, write: 20 } });
    const cached = await complete({ messages: [{ role: 'user', content: 'one two three four' }], max_tokens: 3 });
    expect(cached.answer!.choices[0]!.finish_reason).toBe('length');
    expect(cached.answer!.usage).toMatchObject({ prompt_tokens: 124, completion_tokens: 3, total_tokens: 127, prompt_tokens_details: { cached_tokens: 100 } });
  });

  it('maps the fake\'s errors: 529 → 503, refused key → 502, 429 keeps retry-after', async () => {
    fake.next({ status: 529 });
    expect((await complete({ messages: [{ role: 'user', content: 'x' }] })).error).toMatchObject({ status: 503, retryAfter: '1' });
    fake.next({ status: 429, retryAfter: '9' });
    expect((await complete({ messages: [{ role: 'user', content: 'x' }] })).error).toMatchObject({ status: 429, retryAfter: '9' });
    const request = translation.chatRequest({ messages: [{ role: 'user', content: 'x' }] }, { model: 'claude-haiku-4-5', upstream }, false);
    const refused = await fetch(new URL(request.path, fake.url), { method: 'POST', headers: { ...request.headers, 'x-api-key': 'sk-ant-wrong' }, body: request.body });
    expect(translation.error(refused.status, {}, await refused.text())).toMatchObject({ status: 502, credentialRefused: true });
  });

  it('raises an error event and a cut stream as ProviderStreamError', async () => {
    fake.next({ streamErrorAfter: 4 });
    await expect(streamed({ messages: [{ role: 'user', content: 'hello' }] })).rejects.toMatchObject({ code: 'upstream_overloaded' });
    fake.next({ cutAfter: 6 });
    await expect(streamed({ messages: [{ role: 'user', content: 'hello' }] })).rejects.toBeInstanceOf(ProviderStreamError);
  });

  it('probes with the cheapest authenticated call, listing the models', async () => {
    const probe = translation.probe(upstream);
    const url = new URL(probe.path, fake.url);
    const headers = await auth.authorize(probe, { upstream, url }, () => fake.apiKey, AbortSignal.timeout(5000));
    const response = await fetch(url, { method: probe.method, headers: { ...probe.headers, ...headers } });
    expect(response.status).toBe(200);
    // The whole list: the operator checks each target's model against what Anthropic offers.
    expect((await response.json()).data.map((m: { id: string }) => m.id)).toContain('claude-sonnet-4-6');
  });
});
