// The fake Anthropic is faithful when Anthropic's own SDK, pointed at it, gets what it gets from the
// real API: messages (JSON and streamed through its accumulating helper), tool calls, thinking,
// token counts, the model list, and errors raised as the SDK's own classes.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';

let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  client = new Anthropic({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0 });
});
afterAll(() => fake.close());

const weather = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };
const clock = { name: 'get_time', input_schema: { type: 'object' as const, properties: {} } };

describe('fake Anthropic through @anthropic-ai/sdk', () => {
  it('answers a message from what was sent, with usage counted from it', async () => {
    const message = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user', content: 'hello there fake' }] });
    expect(message.content).toEqual([{ type: 'text', text: 'You said: hello there fake', citations: null }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.input_tokens).toBe(5);
    expect(message.usage.output_tokens).toBe(5);
    const sent = fake.requests.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(sent.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('streams events the SDK accumulates into the same message', async () => {
    const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'stream me please' }] });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const message = await stream.finalMessage();
    expect(text).toBe('You said: stream me please');
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'You said: stream me please' });
    expect(message.usage.output_tokens).toBe(5);
  });

  it('calls the tools named in the prompt, in parallel, streaming their input as JSON fragments', async () => {
    const stream = client.messages.stream({ model: 'claude-sonnet-4-6', max_tokens: 200, tools: [weather, clock], messages: [{ role: 'user', content: 'use get_weather and get_time' }] });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    const calls = message.content.filter((b) => b.type === 'tool_use');
    expect(calls.map((c) => [c.name, c.input])).toEqual([['get_weather', { city: 'use get_weather and get_time' }], ['get_time', {}]]);
    // The tool results go back and the fake answers from them.
    const followUp = await client.messages.create({
      model: 'claude-sonnet-4-6', max_tokens: 200, tools: [weather, clock],
      messages: [
        { role: 'user', content: 'use get_weather and get_time' },
        { role: 'assistant', content: message.content },
        { role: 'user', content: calls.map((c, i) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: `result ${i}` })) },
      ],
    });
    expect(followUp.content[0]).toMatchObject({ type: 'text', text: 'Tool results: result 0; result 1' });
  });

  it('thinks with a signature that must come back unchanged on a tool continuation', async () => {
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const first = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2000, thinking, tools: [clock], messages: [{ role: 'user', content: 'get_time now' }] });
    expect(first.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about: get_time now' });
    const use = first.content.find((b) => b.type === 'tool_use')!;
    const history = (assistant: Anthropic.ContentBlockParam[]) => [
      { role: 'user' as const, content: 'get_time now' },
      { role: 'assistant' as const, content: assistant },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: use.id, content: 'noon' }] },
    ];
    await expect(client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2000, thinking, tools: [clock], messages: history(first.content as Anthropic.ContentBlockParam[]) })).resolves.toBeTruthy();
    const tampered = first.content.map((b) => (b.type === 'thinking' ? { ...b, thinking: 'edited' } : b)) as Anthropic.ContentBlockParam[];
    await expect(client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2000, thinking, tools: [clock], messages: history(tampered) })).rejects.toThrow(/signature/);
    await expect(client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2000, thinking, tools: [clock], messages: history([use as Anthropic.ContentBlockParam]) })).rejects.toThrow(/Expected `thinking`/);
  });

  it('counts tokens and lists models for the probe', async () => {
    const count = await client.messages.countTokens({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'one two three' }] });
    expect(count.input_tokens).toBe(3);
    const page = await client.models.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.data[0]!.id).toBe('claude-sonnet-4-6');
    expect(fake.requests.at(-1)!.path).toBe('/v1/models?limit=1');
  });

  it('refuses what the real API refuses, as the SDK error classes', async () => {
    const base = { model: 'claude-sonnet-4-6', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    await expect(client.messages.create({ ...base, temperature: 1.5 } as never)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(client.messages.create({ ...base, temperature: 0.5, top_p: 0.5 } as never)).rejects.toThrow(/cannot both be specified/);
    await expect(client.messages.create({ ...base, messages: [{ role: 'user', content: '' }] })).rejects.toThrow(/non-empty/);
    await expect(client.messages.create({ ...base, n: 2 } as never)).rejects.toThrow(/n: Extra inputs are not permitted/);
    await expect(client.messages.create({ ...base, model: 'claude-nope' })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(client.messages.create({ ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'r' }] }] })).rejects.toThrow(/must define tools|unexpected `tool_use_id`/);
    const wrongKey = new Anthropic({ apiKey: 'sk-ant-wrong', baseURL: fake.url, maxRetries: 0 });
    await expect(wrongKey.messages.create(base)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('injects 529 and 429 before the answer and an error event inside a stream', async () => {
    const base = { model: 'claude-sonnet-4-6', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    fake.next({ status: 529 });
    await expect(client.messages.create(base)).rejects.toBeInstanceOf(Anthropic.OverloadedError);
    fake.next({ status: 429, retryAfter: '7' });
    const limited = await client.messages.create(base).catch((error: unknown) => error);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limited as InstanceType<typeof Anthropic.RateLimitError>).headers.get('retry-after')).toBe('7');
    fake.next({ streamErrorAfter: 3 });
    await expect(client.messages.stream(base).finalMessage()).rejects.toThrow(/Overloaded/);
  });
});
