// The Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens, GET /v1/models with
// anthropic-version) on service-test, driven by the official Anthropic SDK as Claude Code drives it:
// the same keys (x-api-key or Bearer), plans and limits as the OpenAI routes, answers and streams
// Anthropic's SDK parses without a special case, errors raised as its own error classes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { pngDataUrl, weatherParameters } from '../helpers/fixtures.ts';

const free = newKey('free', 'free-co');

describe('the Messages API on service-test', () => {
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    gw = await startTestGateway([upstream('openai', 'https://api.openai.com/v1'), model('gpt-4o', [{ upstream: 'openai' }]), plan('pro', ['gpt-4o']), account('free-co'), apiKey(free)]);
    client = new Anthropic({ baseURL: gw.url, apiKey: free.key, maxRetries: 0 });
  });
  afterAll(async () => gw?.stop());

  it('answers messages.create with a message, usage in Anthropic meaning and the request id', async () => {
    const { data: message, response } = await client.messages.create({ model: 'service-test', max_tokens: 200, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello from Claude Code' }] }).withResponse();
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.model).toBe('service-test');
    expect(message.id).toMatch(/^msg_/);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content[0]).toMatchObject({ type: 'text' });
    expect((message.content[0] as Anthropic.TextBlock).text).toContain('Hello from Claude Code');
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(response.headers.get('x-service-request-id')).toBeTruthy();
  });

  it('streams with the SDK helper: one message_start, sequential blocks, message_delta and message_stop, the final message equal to the JSON one', async () => {
    const request = { model: 'service-test', max_tokens: 200, messages: [{ role: 'user' as const, content: 'Stream me a sentence' }] };
    const stream = client.messages.stream(request);
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type));
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(events.filter((e) => e === 'message_start')).toHaveLength(1);
    expect(events[0]).toBe('message_start');
    expect(events.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(final.content.map((b) => b.type)).toEqual(['text']);
    expect(text).toBe((final.content[0] as Anthropic.TextBlock).text);
    const whole = await client.messages.create(request);
    expect(text).toBe((whole.content[0] as Anthropic.TextBlock).text);
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
    expect(final.stop_reason).toBe('end_turn');
  });

  it('runs a tool loop to completion: tool_use with an object input, stop_reason tool_use, then an answer that quotes the result', async () => {
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Current weather for a city', input_schema: weatherParameters as Anthropic.Tool.InputSchema }];
    const first = await client.messages.create({ model: 'service-test', max_tokens: 300, tools, messages: [{ role: 'user', content: 'What is the weather? Use get_weather.' }] });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(call.name).toBe('get_weather');
    expect(typeof call.input).toBe('object');
    const streamed = await client.messages.stream({ model: 'service-test', max_tokens: 300, tools, messages: [{ role: 'user', content: 'What is the weather? Use get_weather.' }] }).finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect((streamed.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock).input).toEqual(call.input);
    const second = await client.messages.create({
      model: 'service-test',
      max_tokens: 300,
      tools,
      messages: [
        { role: 'user', content: 'What is the weather? Use get_weather.' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temp":21}' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect((second.content[0] as Anthropic.TextBlock).text).toContain('{"temp":21}');
  });

  it('takes images as base64 blocks', async () => {
    const [, data] = pngDataUrl(8, 8).split(',');
    const message = await client.messages.create({ model: 'service-test', max_tokens: 200, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }, { type: 'text', text: 'Describe this image' }] }] });
    expect((message.content[0] as Anthropic.TextBlock).text).toMatch(/image/i);
  });

  it('counts tokens and lists models in Anthropic form when asked with anthropic-version', async () => {
    const counted = await client.messages.countTokens({ model: 'service-test', messages: [{ role: 'user', content: 'Count these words please' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['service-test']);
    expect(page.data[0].type).toBe('model');
    const openaiShape = await raw(gw, 'GET', '/v1/models', { key: free.key });
    expect(openaiShape.json.object).toBe('list');
  });

  it('errors are Anthropic envelopes the SDK raises as its own classes: bad key, missing max_tokens, a model outside the plan, a server tool', async () => {
    const bad = new Anthropic({ baseURL: gw.url, apiKey: 'tg_sk_notarealkey0000000000000000000000', maxRetries: 0 });
    await expect(bad.messages.create({ model: 'service-test', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const missing = await raw(gw, 'POST', '/v1/messages', { body: { model: 'service-test', messages: [{ role: 'user', content: 'x' }] }, headers: { 'x-api-key': free.key, 'anthropic-version': '2023-06-01' } });
    expect(missing.status).toBe(400);
    expect(missing.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(missing.json.error.message).toMatch(/max_tokens/);
    const outside = await client.messages.create({ model: 'gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(outside.status).toBe(402);
    expect(outside.error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
    const server = await client.messages.create({ model: 'service-test', max_tokens: 10, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(server).toBeInstanceOf(Anthropic.BadRequestError);
    expect(server.error.error.message).toMatch(/server tool 'web_search_20250305' runs only on Anthropic/);
  });

  it('accepts the key as Authorization: Bearer too (Claude Code with ANTHROPIC_AUTH_TOKEN)', async () => {
    const bearer = new Anthropic({ baseURL: gw.url, authToken: free.key, apiKey: null, maxRetries: 0 });
    const message = await bearer.messages.create({ model: 'service-test', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    expect(message.type).toBe('message');
  });
});
