// provider: anthropic end to end: the real gateway with Upstreams pointing at the strict fake
// Anthropic (test/fakes/anthropic.ts), driven by the official `openai` SDK, the Vercel AI SDK and
// LangChain, unmodified. The fake's answers are computed from what it was sent, so each assertion
// follows from the request; what the gateway sent is checked in the fake's log.
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const key = newKey('k', 'acme');
const meterKey = newKey('m', 'meter');
process.env.TEST_UPSTREAM_KEY = 'sk-openai-fallback-0123456789';
process.env.ANTHROPIC_WRONG_KEY = 'sk-ant-refused-0123456789';

let fake: FakeAnthropic;
let openaiFake: FakeUpstream;
let gw: TestGateway;
let client: OpenAI;
let baseURL: string;

const anthropicUpstream = (name: string, env: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { provider: 'anthropic', baseURL: fake.url, credentials: { env }, ...extra },
});

beforeAll(async () => {
  fake = await startFakeAnthropic();
  process.env.ANTHROPIC_TEST_KEY = fake.apiKey;
  openaiFake = await startFakeUpstream('openai-backup', { text: 'answered by the backup' });
  gw = await startTestGateway([
    anthropicUpstream('anthropic', 'ANTHROPIC_TEST_KEY'),
    anthropicUpstream('anthropic-lenient', 'ANTHROPIC_TEST_KEY', { dropUnsupportedParams: true, headers: { 'anthropic-beta': 'some-beta-2026-01-01' } }),
    anthropicUpstream('anthropic-refused', 'ANTHROPIC_WRONG_KEY'),
    anthropicUpstream('anthropic-unset', 'ANTHROPIC_UNSET_KEY'),
    upstream('openai', openaiFake.url),
    model('claude', [{ upstream: 'anthropic', model: 'claude-haiku-4-5' }]),
    model('claude-lenient', [{ upstream: 'anthropic-lenient', model: 'claude-haiku-4-5' }]),
    model('claude-refused', [{ upstream: 'anthropic-refused', model: 'claude-haiku-4-5' }]),
    model('claude-unset', [{ upstream: 'anthropic-unset', model: 'claude-haiku-4-5' }]),
    model('claude-or-gpt', [{ upstream: 'anthropic', model: 'claude-sonnet-4-6', priority: 0 }, { upstream: 'openai', model: 'gpt-backup', priority: 1 }]),
    plan('pro', ['claude*'], { tokensPerMinute: 10_000_000 }),
    account('acme', 'pro'),
    account('meter', 'pro'),
    apiKey(key),
    apiKey(meterKey),
  ]);
  client = gw.client(key.key, { maxRetries: 0 });
  baseURL = client.baseURL;
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await openaiFake?.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  openaiFake.requests.length = 0;
});

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const clockTool = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };

describe('provider: anthropic with the openai SDK', () => {
  it('runs a tool loop to completion, with the Anthropic key and never the client key upstream', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'please get_weather and get_time' }];
    const first = await client.chat.completions.create({ model: 'claude', messages, tools: [weatherTool, clockTool] });
    expect(first.model).toBe('claude');
    expect(first.id).toMatch(/^chatcmpl-msg_fake/);
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const calls = first.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'please get_weather and get_time' }], ['get_time', {}]]);
    messages.push(first.choices[0].message, ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: `${c.function.name} says ok` })));
    const second = await client.chat.completions.create({ model: 'claude', messages, tools: [weatherTool, clockTool] });
    expect(second.choices[0].message.content).toBe('Tool results: get_weather says ok; get_time says ok');
    expect(second.choices[0].finish_reason).toBe('stop');
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(fake.apiKey);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers.authorization).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
  });

  it('streams tool calls the SDK helper assembles, with OpenAI indexes', async () => {
    const stream = client.chat.completions.stream({ model: 'claude', messages: [{ role: 'user', content: 'get_time and get_weather' }], tools: [weatherTool, clockTool] });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    const calls = final.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([['get_weather', '{"city":"get_time and get_weather"}'], ['get_time', '{}']]);
  });

  it('takes images as data URLs and http URLs', async () => {
    const answer = await client.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'describe' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'image_url', image_url: { url: 'https://example.com/cat.webp' } }] }],
    });
    expect(answer.choices[0].message.content).toBe('You said: describe [images: image image/png base64, image url https://example.com/cat.webp]');
  });

  it('answers a json_schema response_format with a document of that schema', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string' }, letters: { type: 'integer' } }, required: ['name', 'letters'], additionalProperties: false };
    const answer = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'Oslo' }], response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } } });
    expect(JSON.parse(answer.choices[0].message.content!)).toEqual({ name: 'Oslo', letters: 4 });
    expect(fake.requests.at(-1)!.body!.output_config).toEqual({ format: { type: 'json_schema', schema } });
  });

  it('streams with usage in OpenAI\'s meaning (cached input inside prompt_tokens) and reasoning text', async () => {
    fake.next({ cache: { read: 40, write: 10 } });
    const stream = await client.chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, reasoning_effort: 'low', messages: [{ role: 'user', content: 'count these four words' }] });
    let text = '';
    let reasoning = '';
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('You said: count these four words');
    expect(reasoning).toBe('Thinking about: count these four words');
    // 4 input words + 40 cache reads + 10 cache writes; 6 words thought + 6 answered.
    expect(usage).toMatchObject({ prompt_tokens: 54, completion_tokens: 12, total_tokens: 66, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 6 } });
    expect(fake.requests.at(-1)!.body!.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });
});

describe('provider: anthropic reasoning', () => {
  it('returns signed thinking blocks that, sent back, keep thinking on across a tool loop', async () => {
    const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'get_time with thought' };
    const first = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'medium', tools: [clockTool], messages: [question] });
    const message = first.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string; thinking_blocks?: Array<{ type: string; signature?: string }> };
    expect(message.reasoning_content).toBe('Thinking about: get_time with thought');
    expect(message.thinking_blocks?.[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about: get_time with thought', signature: expect.any(String) });
    const result: OpenAI.ChatCompletionMessageParam = { role: 'tool', tool_call_id: message.tool_calls![0]!.id, content: 'noon' };
    // The whole message back, as many clients keep it: the fake verifies the signature.
    const second = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'medium', tools: [clockTool], messages: [question, message as OpenAI.ChatCompletionAssistantMessageParam, result] });
    expect(second.choices[0].message.content).toBe('Tool results: noon');
    expect(fake.requests.at(-1)!.body!.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    // A tampered block is refused by Anthropic (here the fake), as the client's 400.
    const tampered = { ...message, thinking_blocks: [{ ...message.thinking_blocks![0], thinking: 'edited' }] };
    const refused = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'medium', tools: [clockTool], messages: [question, tampered as OpenAI.ChatCompletionAssistantMessageParam, result] }).catch((error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
  });
});

describe('provider: anthropic error paths', () => {
  /** The error a request fails with (a success fails the test). */
  const failure = (request: Promise<unknown>) =>
    request.then(
      () => {
        throw new Error('expected the request to fail');
      },
      (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
    );
  const ask = (model = 'claude', extra: Record<string, unknown> = {}) =>
    failure(client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming));

  it('answers 400 naming the parameter before anything is sent, or drops it when the Upstream says so', async () => {
    const refused = await ask('claude', { n: 2 });
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused.error).toMatchObject({ param: 'n', code: 'unsupported_parameter' });
    const hot = await ask('claude', { temperature: 1.7 });
    expect(hot.error).toMatchObject({ param: 'temperature' });
    expect(fake.requests).toHaveLength(0);
    const dropped = await client.chat.completions.create({ model: 'claude-lenient', n: 2, seed: 3, messages: [{ role: 'user', content: 'hi' }] });
    expect(dropped.choices[0].message.content).toBe('You said: hi');
    // The Upstream's own headers (a beta switch) go along; the client's do not.
    expect(fake.requests.at(-1)!.headers['anthropic-beta']).toBe('some-beta-2026-01-01');
  });

  it('relays a 429 with its retry-after, and Anthropic\'s own 400 in OpenAI words', async () => {
    fake.next({ status: 429, retryAfter: '7' });
    const limited = await ask();
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.headers?.get('retry-after')).toBe('7');
    fake.next({ status: 400, message: 'prompt is too long: 300000 tokens > 200000 maximum' });
    const long = await ask();
    expect(long.status).toBe(400);
    expect(long.error).toMatchObject({ code: 'context_length_exceeded', type: 'invalid_request_error' });
  });

  it('turns 529 into 503 with Retry-After, and falls back to the next target (an OpenAI upstream) first', async () => {
    fake.next({ status: 529 });
    const overloaded = await ask();
    expect(overloaded).toBeInstanceOf(OpenAI.InternalServerError);
    expect(overloaded.status).toBe(503);
    expect(overloaded.headers?.get('retry-after')).toBe('1');
    fake.requests.length = 0;
    fake.next({ status: 529 });
    const answer = await client.chat.completions.create({ model: 'claude-or-gpt', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.model).toBe('claude-or-gpt');
    expect(answer.choices[0].message.content).toBe('answered by the backup');
    expect(fake.requests).toHaveLength(1);
    expect(JSON.parse(openaiFake.requests[0]!.body).model).toBe('gpt-backup');
  });

  it('a refused Anthropic key is 502 upstream_auth_failed, not a 401 for the client, and leaks no key', async () => {
    const refused = await ask('claude-refused');
    expect(refused.status).toBe(502);
    expect(refused.error).toMatchObject({ code: 'upstream_auth_failed' });
    expect(JSON.stringify(refused.error)).not.toContain(process.env.ANTHROPIC_WRONG_KEY!);
    expect(gw.logText()).not.toContain(process.env.ANTHROPIC_WRONG_KEY!);
    expect(gw.logText()).not.toContain(fake.apiKey);
  });

  it('a missing Anthropic key is a 502 naming the variable; embeddings are refused with a 400', async () => {
    const missing = await ask('claude-unset');
    expect(missing.status).toBe(502);
    expect(missing.error).toMatchObject({ code: 'upstream_auth_failed' });
    expect(missing.message).toContain('ANTHROPIC_UNSET_KEY');
    const vectors = await failure(client.embeddings.create({ model: 'claude', input: 'x' }));
    expect(vectors.status).toBe(400);
    expect(fake.requests).toHaveLength(0);
  });

  it('raises an error event mid-stream and a truncated stream in the SDK, never a clean finish', async () => {
    for (const script of [{ streamErrorAfter: 4 }, { cutAfter: 5 }]) {
      fake.next(script);
      const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'a longer answer please' }] });
      let text = '';
      await expect(async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      }).rejects.toThrow(script.streamErrorAfter ? /Overloaded/ : /ended before message_stop/);
      expect(text.length).toBeGreaterThan(0);
    }
  });
});

describe('provider: anthropic with the Vercel AI SDK and LangChain', () => {
  const ai = () => createOpenAI({ baseURL, apiKey: key.key });
  const lc = (extra: Record<string, unknown> = {}) => new ChatOpenAI({ model: 'claude', apiKey: key.key, configuration: { baseURL }, maxRetries: 0, ...extra });

  it('AI SDK: a tool loop over several steps, a stream with usage, and generateObject', async () => {
    const openai = ai();
    const getWeather = tool({ description: 'Weather', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `sunny in ${city.length} letters` });
    const looped = await generateText({ model: openai.chat('claude'), tools: { getWeather }, stopWhen: stepCountIs(4), prompt: 'getWeather for Rome' });
    expect(looped.steps).toHaveLength(2);
    expect(looped.steps[0]!.toolCalls[0]!.toolName).toBe('getWeather');
    expect(looped.text).toBe('Tool results: sunny in 19 letters');
    const streamed = streamText({ model: openai.chat('claude'), prompt: 'stream three words' });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe('You said: stream three words');
    expect(await streamed.usage).toMatchObject({ inputTokens: 3, outputTokens: 5 });
    const { object } = await generateObject({ model: openai.chat('claude'), schema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }), prompt: 'Paris' });
    expect(object).toEqual({ city: 'Paris', unit: 'celsius' });
  });

  it('LangChain: invoke, stream, a bound tool round trip and structured output', async () => {
    const answer = await lc().invoke('hello from langchain');
    expect(answer.text).toBe('You said: hello from langchain');
    expect(answer.usage_metadata).toMatchObject({ input_tokens: 3, output_tokens: 5 });
    let streamed = '';
    for await (const chunk of await lc().stream('stream from langchain')) streamed += typeof chunk.content === 'string' ? chunk.content : '';
    expect(streamed).toBe('You said: stream from langchain');
    const weather = langchainTool(async ({ city }) => `warm in ${city}`, { name: 'get_weather', description: 'Weather', schema: z.object({ city: z.string() }) });
    const bound = lc().bindTools([weather]);
    const question = new HumanMessage('get_weather Lisbon');
    const first = (await bound.invoke([question])) as AIMessage;
    expect(first.tool_calls?.[0]).toMatchObject({ name: 'get_weather', args: { city: 'get_weather Lisbon' } });
    const result = await weather.invoke(first.tool_calls![0]!);
    const final = await bound.invoke([question, first, result]);
    expect(final.text).toBe('Tool results: warm in get_weather Lisbon');
    const structured = await lc().withStructuredOutput(z.object({ city: z.string(), population: z.number() })).invoke('Lima');
    expect(structured).toEqual({ city: 'Lima', population: 4 });
  });
});

describe('provider: anthropic behind the gateway\'s own Messages API', () => {
  it('the Anthropic SDK reaches a Claude target through both translations: text, stream and a tool loop', async () => {
    const claude = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const text = await claude.messages.create({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'round trip' }] });
    expect(text.content).toMatchObject([{ type: 'text', text: 'You said: round trip' }]);
    const streamed = await claude.messages.stream({ model: 'claude', max_tokens: 50, messages: [{ role: 'user', content: 'round stream' }] }).finalMessage();
    expect(streamed.content).toMatchObject([{ type: 'text', text: 'You said: round stream' }]);
    const tools = [{ name: 'get_time', input_schema: { type: 'object' as const, properties: {} } }];
    const first = await claude.messages.create({ model: 'claude', max_tokens: 200, tools, messages: [{ role: 'user', content: 'get_time now' }] });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use')!;
    const final = await claude.messages.create({
      model: 'claude', max_tokens: 200, tools,
      messages: [{ role: 'user', content: 'get_time now' }, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'noon' }] }],
    });
    expect(final.content).toMatchObject([{ type: 'text', text: 'Tool results: noon' }]);
  });
});

describe('provider: anthropic behind the gateway\'s Responses API', () => {
  it('answers a Response and its continuation from a Claude target', async () => {
    const first = await client.responses.create({ model: 'claude', input: 'respond please' });
    expect(first.output_text).toBe('You said: respond please');
    const next = await client.responses.create({ model: 'claude', input: 'and again', previous_response_id: first.id });
    expect(next.output_text).toBe('You said: and again');
    // The continuation carried the earlier turns to Anthropic.
    expect((fake.requests.at(-1)!.body!.messages as unknown[]).length).toBe(3);
  });
});

describe('provider: anthropic and limits', () => {
  it('settles the account\'s usage to the translated usage (cache tokens inside input)', async () => {
    const meter = gw.client(meterKey.key, { maxRetries: 0 });
    fake.next({ cache: { read: 30, write: 0 } });
    const one = await meter.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'one two' }] });
    const stream = await meter.chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'three four five' }] });
    let streamedUsage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) streamedUsage = chunk.usage;
    const input = one.usage!.prompt_tokens + streamedUsage!.prompt_tokens;
    const output = one.usage!.completion_tokens + streamedUsage!.completion_tokens;
    expect(input).toBe(2 + 30 + 3);
    let usage: { inputTokens?: number; outputTokens?: number; requests?: number } = {};
    await waitFor(async () => {
      const body = await (await fetch(`${gw.telemetry.metricsURL}/usage`)).json();
      usage = body.accounts.meter ?? {};
      return usage.requests === 2;
    }, 10_000, 'the meter account\'s usage');
    expect(usage).toMatchObject({ inputTokens: input, outputTokens: output });
  });
});
