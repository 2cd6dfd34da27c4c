// provider: bedrock end to end: the real gateway, an Upstream of the fake Bedrock (which verifies
// SigV4 and validates Converse as AWS does), driven by the official openai SDK, the Vercel AI SDK and
// LangChain. Every answer the clients see was translated from Bedrock's wire formats by the gateway.
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
process.env.TEST_BEDROCK_KEY_ID = FAKE_ACCESS_KEY;
process.env.TEST_BEDROCK_SECRET = FAKE_SECRET_KEY;
process.env.TEST_BEDROCK_WRONG_SECRET = 'not-the-fake-secret-0000000000000000000';
process.env.TEST_UPSTREAM_KEY = 'sk-openai-fallback-0123456789';
const key = newKey('k', 'acme');
const soloKey = newKey('solo-k', 'solo');

function bedrockUpstream(name: string, url: string, secretEnv = 'TEST_BEDROCK_SECRET') {
  return {
    apiVersion: API,
    kind: 'Upstream',
    metadata: { name },
    spec: { provider: 'bedrock', baseURL: url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'TEST_BEDROCK_KEY_ID' }, secretAccessKey: { env: secretEnv } } },
  };
}

describe('provider: bedrock', () => {
  let fake: FakeBedrock;
  let openaiFake: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeBedrock();
    openaiFake = await startFakeUpstream('openai-fallback');
    gw = await startTestGateway([
      bedrockUpstream('aws', fake.url),
      bedrockUpstream('aws-wrong-key', fake.url, 'TEST_BEDROCK_WRONG_SECRET'),
      upstream('openai', openaiFake.url),
      model('claude', [{ upstream: 'aws', model: CLAUDE }]),
      model('llama', [{ upstream: 'aws', model: 'meta.llama3-3-70b-instruct-v1:0' }]),
      model('claude-or-openai', [{ upstream: 'aws', model: CLAUDE, priority: 0 }, { upstream: 'openai', model: 'gpt-backup', priority: 1 }]),
      model('claude-bad-key', [{ upstream: 'aws-wrong-key', model: CLAUDE }]),
      model('titan', [{ upstream: 'aws', model: 'amazon.titan-embed-text-v2:0' }]),
      model('cohere', [{ upstream: 'aws', model: 'cohere.embed-english-v3' }]),
      plan('pro', ['claude', 'llama', 'claude-or-openai', 'claude-bad-key', 'titan', 'cohere']),
      account('acme', 'pro'),
      account('solo', 'pro'),
      apiKey(key),
      apiKey(soloKey),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
    await openaiFake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  describe('the openai SDK', () => {
    it('chat: a signed Converse call, answered under the public model name with the request id', async () => {
      const answer = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello bedrock' }] });
      expect(answer.model).toBe('claude');
      expect(answer.choices[0].message.content).toBe('You said: hello bedrock');
      expect(answer.choices[0].finish_reason).toBe('stop');
      expect(answer.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
      const sent = fake.requests.at(-1)!;
      expect(sent).toMatchObject({ rawPath: '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse', refused: null });
      expect(sent.body).toEqual({ messages: [{ role: 'user', content: [{ text: 'hello bedrock' }] }], system: [{ text: 'Be brief.' }] });
      expect(sent.headers.authorization).not.toContain(key.key);
      expect(JSON.stringify(sent.headers)).not.toContain(key.key);
      expect(answer.id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/);
    });

    it('a stream with usage (cache reads counted in prompt_tokens), written byte by byte by Bedrock', async () => {
      fake.next({ byteByByte: true, usage: { inputTokens: 10, outputTokens: 6, cacheReadInputTokens: 30 } });
      const stream = await client.chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'one two three four' }] });
      let text = '';
      let usage: OpenAI.CompletionUsage | undefined;
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
        expect(chunk.model).toBe('claude');
      }
      expect(text).toBe('You said: one two three four');
      expect(finish).toBe('stop');
      expect(usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 6, total_tokens: 46, prompt_tokens_details: { cached_tokens: 30 } });
      expect(fake.requests.at(-1)!.rawPath).toMatch(/\/converse-stream$/);
    });

    it('a tool loop to completion, the dotted tool name restored in answers', async () => {
      const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'weather.get', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Oslo' }];
      const first = await client.chat.completions.create({ model: 'claude', messages, tools, tool_choice: 'required' });
      expect(first.choices[0].finish_reason).toBe('tool_calls');
      const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(call.function.name).toBe('weather.get');
      expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Oslo' });
      expect(fake.requests.at(-1)!.body.toolConfig.tools[0].toolSpec.name).toMatch(/^weather_get_[0-9a-f]{10}$/);
      messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'rain, 4 degrees' });
      const second = await client.chat.completions.create({ model: 'claude', messages, tools });
      expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Tool results: rain, 4 degrees' } });
    });

    it('a streamed tool call with no arguments gets "{}"', async () => {
      const stream = await client.chat.completions.create({ model: 'claude', stream: true, tools: [{ type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } }], tool_choice: 'required', messages: [{ role: 'user', content: 'time?' }] });
      const args: string[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) args.push(call.function?.arguments ?? '');
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(args.join('')).toBe('{}');
      expect(finish).toBe('tool_calls');
    });

    it('vision with a data URL; a remote image URL the gateway may not fetch (loopback) is a 400 naming the part, before anything is sent', async () => {
      const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
      const answer = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] });
      expect(answer.choices[0].message.content).toBe('You said: what is it [images: png 16 bytes]');
      fake.requests.length = 0;
      const remote = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://127.0.0.1:9/cat.png' } }] }] }).catch((e) => e);
      expect(remote).toBeInstanceOf(OpenAI.BadRequestError);
      expect(remote.error).toMatchObject({ param: 'messages[0].content[0].image_url.url', code: 'invalid_image_url' });
      expect(fake.requests).toHaveLength(0);
    });

    it('embeddings: Titan fanned out one call per input, base64 as the SDK asks; Cohere in one call', async () => {
      const titan = await client.embeddings.create({ model: 'titan', input: ['first text', 'second'], dimensions: 256 });
      expect(titan.data.map((d) => [d.index, d.embedding.length])).toEqual([[0, 256], [1, 256]]);
      expect(titan.usage).toMatchObject({ prompt_tokens: 3, total_tokens: 3 });
      expect(titan.model).toBe('titan');
      expect(fake.requests.map((r) => r.body.inputText)).toEqual(['first text', 'second']);
      fake.requests.length = 0;
      const cohere = await client.embeddings.create({ model: 'cohere', input: ['a', 'b', 'c'] });
      expect(cohere.data).toHaveLength(3);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].body).toMatchObject({ texts: ['a', 'b', 'c'], input_type: 'search_query' });
    });
  });

  describe('errors', () => {
    it('a parameter Bedrock lacks is a 400 naming it, before anything is sent', async () => {
      for (const [param, extra] of [['n', { n: 2 }], ['logit_bias', { logit_bias: { '1': 5 } }], ['temperature', { temperature: 1.5 }]] as const) {
        const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }], ...extra } as any).catch((e) => e);
        expect(error.status).toBe(400);
        expect(error.error.param).toBe(param);
      }
      const named = await client.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'f' } } }).catch((e) => e);
      expect(named.error.param).toBe('tool_choice');
      expect(fake.requests).toHaveLength(0);
    });

    it('ThrottlingException is a 429 with retry-after', async () => {
      fake.next({ error: { status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '3' } } });
      const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect(error.headers.get('retry-after')).toBe('3');
      expect(error.error.code).toBe('rate_limit_exceeded');
    });

    it('ServiceUnavailable falls back to the next target; alone it is a 503', async () => {
      fake.next({ error: { status: 503, type: 'ServiceUnavailableException', message: 'Bedrock is unavailable.' } });
      const answer = await client.chat.completions.create({ model: 'claude-or-openai', messages: [{ role: 'user', content: 'x' }] });
      expect(answer.model).toBe('claude-or-openai');
      expect(openaiFake.requests.at(-1)!.path).toBe('/v1/chat/completions');
      fake.next({ error: { status: 429, type: 'ModelNotReadyException', message: 'Model is not ready.' } });
      const alone = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
      expect(alone.status).toBe(503);
    });

    it('a refused signature is 502 upstream_auth_failed, and AWS’s canonical request never reaches the client', async () => {
      const error = await client.chat.completions.create({ model: 'claude-bad-key', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
      expect(error.status).toBe(502);
      expect(error.error.code).toBe('upstream_auth_failed');
      expect(fake.requests.at(-1)!.refused).toBe('InvalidSignatureException');
      expect(JSON.stringify(error.error)).not.toMatch(/Canonical|\/model\/|not-the-fake-secret/);
      expect(gw.logText()).not.toContain('not-the-fake-secret');
    });

    it('a ValidationException is a 400 with Bedrock’s message', async () => {
      const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'x' }], top_p: 1.5 }).catch((e) => e);
      expect(fake.requests).toHaveLength(1);
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ type: 'invalid_request_error', message: 'inferenceConfig.topP must be between 0 and 1 (ValidationException)' });
    });

    it('an exception frame mid-stream is raised by the SDK; a cut stream is never a success', async () => {
      fake.next({ streamException: { afterEvents: 2, type: 'modelStreamErrorException', message: 'The model failed mid-answer.' } });
      const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] });
      let text = '';
      const error = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      })().catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error.message).toMatch(/The model failed mid-answer/);
      expect(text.length).toBeGreaterThan(0);

      fake.next({ truncateAfterEvents: 3 });
      const cut = await client.chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] });
      const cutError = await (async () => {
        for await (const _ of cut);
      })().catch((e) => e);
      expect(cutError).toBeInstanceOf(OpenAI.APIError);
      expect(cutError.message).toMatch(/before messageStop/);
    });
  });

  describe('the Vercel AI SDK and LangChain', () => {
    const ai = () => createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.key });

    it('AI SDK: a tool loop over several steps, streamText with usage, generateObject', async () => {
      const getWeather = tool({ description: 'Weather of a city', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => ({ city, temperature: 21 }) });
      const result = await generateText({ model: ai().chat('claude'), tools: { getWeather }, stopWhen: stepCountIs(4), prompt: 'call getWeather please' });
      expect(result.steps.length).toBe(2);
      expect(result.steps[0].toolCalls[0].toolName).toBe('getWeather');
      expect(result.text).toContain('Tool results:');
      expect(result.text).toContain('"temperature":21');

      const streamed = streamText({ model: ai().chat('claude'), prompt: 'stream this' });
      let text = '';
      for await (const piece of streamed.textStream) text += piece;
      expect(text).toBe('You said: stream this');
      expect((await streamed.usage).inputTokens).toBe(2);

      const object = await generateObject({ model: ai().chat('claude'), schema: z.object({ name: z.string(), age: z.number().int() }), prompt: 'Ada' });
      expect(object.object).toEqual({ name: 'Ada', age: 3 });
      expect(fake.requests.at(-1)!.body.outputConfig.textFormat.type).toBe('json_schema');
    });

    it('LangChain: invoke, stream and withStructuredOutput', async () => {
      const chat = new ChatOpenAI({ model: 'claude', apiKey: key.key, configuration: { baseURL: `${gw.url}/v1` }, maxRetries: 0 });
      const answer = await chat.invoke('hello langchain');
      expect(answer.content).toBe('You said: hello langchain');
      let streamed = '';
      for await (const chunk of await chat.stream('stream langchain')) streamed += chunk.content;
      expect(streamed).toBe('You said: stream langchain');
      const person = await chat.withStructuredOutput(z.object({ name: z.string() })).invoke('Grace');
      expect(person).toEqual({ name: 'Grace' });
    });
  });

  it('the Anthropic Messages API (Claude Code’s route) answered by Bedrock: a streamed tool call', async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      model: 'claude',
      max_tokens: 300,
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Bergen' }],
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.find((b) => b.type === 'tool_use')).toMatchObject({ name: 'get_weather', input: { city: 'Bergen' } });
    expect(fake.requests.at(-1)!.rawPath).toMatch(/\/converse-stream$/);
  });

  it('limits and usage settle to the translated usage (cache reads in the input tokens)', async () => {
    const usageOf = async () => ((await (await fetch(`${gw.telemetry.metricsURL}/usage`)).json()).accounts.solo ?? { inputTokens: 0, outputTokens: 0, requests: 0 });
    const before = await usageOf();
    fake.next({ usage: { inputTokens: 7, outputTokens: 5, cacheReadInputTokens: 11, cacheWriteInputTokens: 2 } });
    const answer = await gw.client(soloKey.key).chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'count me' }] });
    expect(answer.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 5 });
    await waitFor(async () => (await usageOf()).requests === before.requests + 1, 10_000, 'the usage of the request');
    const after = await usageOf();
    expect(after.inputTokens - before.inputTokens).toBe(20);
    expect(after.outputTokens - before.outputTokens).toBe(5);
  });
});
