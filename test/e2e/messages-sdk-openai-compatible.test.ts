// The official Anthropic SDK against a model on an OpenAI-compatible upstream (the fake with the
// deterministic chat model of openai-chat-model.ts): count_tokens, models.list, a tool loop whose
// tool_result goes back, a base64 image reaching the upstream as an image_url data URL, thinking from
// the upstream's reasoning_content as a thinking block through messages.stream's helpers, and errors
// raised as the SDK's own classes. The fake's chat model is first shown faithful with the openai SDK.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { chatModel } from '../fakes/openai-chat-model.ts';
import { pngDataUrl } from '../helpers/fixtures.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
const key = newKey('k', 'acme');
const TOOLS: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Current weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] } }];

describe('the Anthropic SDK on a model served by an OpenAI-compatible upstream', () => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    fake = await startFakeUpstream('compat');
    gw = await startTestGateway([upstream('compat', fake.url), model('gpt-compat', [{ upstream: 'compat', model: 'qwen-coder' }]), model('gpt-other', [{ upstream: 'compat' }]), plan('pro', ['gpt-compat', 'gpt-other']), account('acme', 'pro'), apiKey(key)]);
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.behave({ respond: chatModel(fake) });
    fake.requests.length = 0;
  });
  const sentUpstream = () => JSON.parse(fake.requests.at(-1)!.body);

  it("the fake's chat model is what the openai SDK reads: a streamed tool call rebuilt whole, reasoning_content beside the answer", async () => {
    const openai = new OpenAI({ baseURL: fake.url, apiKey: 'sk-upstream-secret', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: TOOLS[0].input_schema as Record<string, unknown> } }];
    const stream = openai.chat.completions.stream({ model: 'qwen-coder', messages: [{ role: 'user', content: 'Use get_weather for Oslo' }], tools, stream_options: { include_usage: true } });
    const called = await stream.finalChatCompletion();
    expect(called.choices[0].finish_reason).toBe('tool_calls');
    const toolCall = called.choices[0].message.tool_calls![0];
    expect(toolCall.type).toBe('function');
    expect(JSON.parse((toolCall as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments)).toEqual({ city: 'Use get_weather for Oslo', days: 24 });
    expect(called.usage!.prompt_tokens).toBe(4);
    const thought = await openai.chat.completions.create({ model: 'qwen-coder', messages: [{ role: 'user', content: 'Ponder this' }], reasoning_effort: 'low' });
    expect(thought.choices[0].message.content).toBe('You said: Ponder this');
    expect((thought.choices[0].message as unknown as { reasoning_content: string }).reasoning_content).toBe('Thinking about: Ponder this');
  });

  it('counts tokens (more words, more tokens) without calling the upstream, and lists the plan’s models in Anthropic’s format', async () => {
    const short = await client.messages.countTokens({ model: 'gpt-compat', messages: [{ role: 'user', content: 'one two three' }] });
    const long = await client.messages.countTokens({ model: 'gpt-compat', system: 'You are terse.', tools: TOOLS, messages: [{ role: 'user', content: 'one two three four five six seven eight nine ten eleven twelve' }] });
    expect(short.input_tokens).toBeGreaterThan(0);
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens);
    expect(fake.requests).toHaveLength(0);

    const page = await client.models.list();
    expect(page.data.map((m) => m.id).sort()).toEqual(['gpt-compat', 'gpt-other', 'service-test']);
    for (const m of page.data) expect(m).toMatchObject({ type: 'model', display_name: expect.any(String), created_at: expect.any(String) });
    expect((await client.models.retrieve('gpt-compat')).id).toBe('gpt-compat');
    // Without anthropic-version the same route answers OpenAI's list.
    const openaiList = await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } })).json();
    expect(openaiList.object).toBe('list');
  });

  it('runs a tool loop: tool_use with its whole input, then the tool_result goes back as a tool message after the call and the answer quotes it', async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'What is the weather? Use get_weather.' };
    const stream = client.messages.stream({ model: 'gpt-compat', max_tokens: 300, tools: TOOLS, messages: [question] });
    const inputs: string[] = [];
    stream.on('inputJson', (partial) => inputs.push(partial));
    const first = await stream.finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(call).toMatchObject({ name: 'get_weather', input: { city: 'What is the weather? Use get_weather.', days: 37 } });
    expect(inputs.length).toBeGreaterThan(1);
    expect(call.id).toBe('call_fake0get_weather');

    const second = await client.messages.create({
      model: 'gpt-compat',
      max_tokens: 300,
      tools: TOOLS,
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] }],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'Tool results: Sunny, 21 C' }]);
    const sent = sentUpstream();
    expect(sent.model).toBe('qwen-coder');
    expect(sent.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(call.input) } }] },
      { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 C' },
    ]);
  });

  it('sends a base64 image to the upstream as an image_url data URL, unchanged', async () => {
    const [prefix, data] = pngDataUrl(8, 8).split(',');
    expect(prefix).toBe('data:image/png;base64');
    const message = await client.messages.create({
      model: 'gpt-compat',
      max_tokens: 100,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe it' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }],
    });
    expect(message.content).toEqual([{ type: 'text', text: 'You said: Describe it' }]);
    expect(sentUpstream().messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Describe it' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] }]);
  });

  it("thinks in a thinking block: the upstream's reasoning_content through messages.stream's helpers, and in a JSON answer", async () => {
    const request = { model: 'gpt-compat', max_tokens: 4000, thinking: { type: 'enabled' as const, budget_tokens: 2048 }, messages: [{ role: 'user' as const, content: 'Think about tides' }] };
    const stream = client.messages.stream(request);
    let thinking = '';
    let text = '';
    stream.on('thinking', (delta) => (thinking += delta));
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(sentUpstream().reasoning_effort).toBe('low');
    expect(thinking).toBe('Thinking about: Think about tides');
    expect(text).toBe('You said: Think about tides');
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect((final.content[0] as Anthropic.ThinkingBlock).thinking).toBe(thinking);
    const whole = await client.messages.create(request);
    expect(whole.content).toEqual(final.content);
    expect(whole.usage.output_tokens).toBe(final.usage.output_tokens);
  });

  it("errors are the SDK's classes: a request the upstream refuses (400), a bad key (401), the upstream's rate limit (429)", async () => {
    fake.behave({ status: 400 });
    const refused = await client.messages.create({ model: 'gpt-compat', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
    const invalid = await client.messages.create({ model: 'gpt-compat', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(invalid).toBeInstanceOf(Anthropic.BadRequestError);
    expect(invalid.error.error.message).toMatch(/^max_tokens/);

    const stranger = new Anthropic({ baseURL: gw.url, apiKey: 'k_sk_not-a-key', maxRetries: 0 });
    const unauthenticated = await stranger.messages.create({ model: 'gpt-compat', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(unauthenticated).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(unauthenticated.error.error.type).toBe('authentication_error');

    fake.behave({ status: 429, headers: { 'retry-after': '7' } });
    const limited = await client.messages.stream({ model: 'gpt-compat', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage().catch((e) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.error.error.type).toBe('rate_limit_error');
    expect(JSON.stringify(limited.error)).not.toContain('sk-upstream-secret');
  });
});
