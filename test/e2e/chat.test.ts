import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { pngDataUrl, weatherParameters } from '../helpers/fixtures.ts';

const free = newKey('free', 'free-co');
const paid = newKey('paid', 'paid-co');

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: weatherParameters,
  },
};

describe('chat completions with service-test', () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway([
      upstream('openai', 'https://api.openai.com/v1'),
      model('gpt-4o', [{ upstream: 'openai' }]),
      plan('pro', ['gpt-4o']),
      account('free-co'),
      account('paid-co', 'pro'),
      apiKey(free),
      apiKey(paid),
    ]);
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  it('answers in the OpenAI shape, deterministically, with honest usage', async () => {
    const request = { model: 'service-test', messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Hello there' }] };
    const { data: first, response } = await client.chat.completions.create(request).withResponse();
    const second = await client.chat.completions.create(request);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.id).toMatch(/^chatcmpl-/);
    expect(first.object).toBe('chat.completion');
    expect(first.model).toBe('service-test');
    expect(first.choices[0].finish_reason).toBe('stop');
    expect(first.choices[0].message.role).toBe('assistant');
    expect(first.choices[0].message.content).toContain('Hello there');
    expect(second.choices[0].message.content).toBe(first.choices[0].message.content);
    const usage = first.usage!;
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    // 2 messages × (3 framing + role + content) + 3 priming: "Be brief." and "Hello there" are a few tokens each.
    expect(usage.prompt_tokens).toBeGreaterThan(12);
    expect(usage.prompt_tokens).toBeLessThan(30);
    expect(usage.completion_tokens).toBeGreaterThan(5);
  });

  it('cuts the answer at max_tokens with finish_reason "length"', async () => {
    const full = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Tell me everything' }] });
    const cut = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Tell me everything' }], max_completion_tokens: 4 });
    expect(cut.choices[0].finish_reason).toBe('length');
    expect(cut.usage!.completion_tokens).toBe(4);
    expect(full.choices[0].message.content!.startsWith(cut.choices[0].message.content!)).toBe(true);
    expect(cut.choices[0].message.content!.length).toBeLessThan(full.choices[0].message.content!.length);
  });

  it('applies stop sequences and n', async () => {
    const answer = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }], stop: ['model'], n: 2 });
    expect(answer.choices).toHaveLength(2);
    expect(answer.choices[0].message.content).not.toContain('model');
    expect(answer.choices[1].message.content).toBe(answer.choices[0].message.content);
  });

  it('streams with chat.completions.stream(): role first, fragments, finish_reason, usage chunk', async () => {
    const nonStream = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Stream this please' }] });
    const stream = client.chat.completions.stream({ model: 'service-test', messages: [{ role: 'user', content: 'Stream this please' }], stream_options: { include_usage: true } });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe(nonStream.choices[0].message.content);
    expect(final.choices[0].message.content).toBe(nonStream.choices[0].message.content);
    expect(final.choices[0].finish_reason).toBe('stop');
    expect(final.usage).toMatchObject({ prompt_tokens: nonStream.usage!.prompt_tokens, completion_tokens: nonStream.usage!.completion_tokens });
  });

  it('frames SSE exactly: data lines, shared id, role first, usage chunk with empty choices, [DONE]', async () => {
    const response = await raw(gw, 'POST', '/v1/chat/completions', {
      key: free.key,
      body: { model: 'service-test', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'frame me' }] },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('x-request-id')).toBe(response.headers.get('x-service-request-id'));
    expect(response.text.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = response.text.split('\n\n').filter(Boolean);
    for (const event of events) expect(event).toMatch(/^data: /);
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const usageChunk = chunks[chunks.length - 1];
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage.total_tokens).toBeGreaterThan(0);
    const finish = chunks[chunks.length - 2];
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
  });

  it('calls a mentioned tool with arguments that validate against its schema', async () => {
    const answer = await client.chat.completions.create({
      model: 'service-test',
      messages: [{ role: 'user', content: 'What is the weather in "Paris" in celsius for 3 days?' }],
      tools: [weatherTool, { type: 'function', function: { name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string', format: 'email' } }, required: ['to'] } } }],
    });
    const choice = answer.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0];
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments);
    const validate = new Ajv().compile(weatherTool.function.parameters);
    expect(validate(args)).toBe(true);
    expect(args).toEqual({ city: 'Paris', unit: 'celsius', days: 3 });
  });

  it('answers in text when no tool is called for, and honours tool_choice', async () => {
    const unrelated = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Tell me a joke' }], tools: [weatherTool] });
    expect(unrelated.choices[0].finish_reason).toBe('stop');
    const forced = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Tell me a joke' }], tools: [weatherTool], tool_choice: 'required' });
    expect(forced.choices[0].finish_reason).toBe('tool_calls');
    const none = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'weather in Oslo?' }], tools: [weatherTool], tool_choice: 'none' });
    expect(none.choices[0].finish_reason).toBe('stop');
  });

  it('completes the whole function-calling loop with runTools()', async () => {
    const calls: Array<Record<string, unknown>> = [];
    const runner = client.chat.completions.runTools({
      model: 'service-test',
      messages: [{ role: 'user', content: 'What is the weather in "Oslo"?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather for a city',
            parameters: weatherTool.function.parameters,
            parse: JSON.parse,
            function: (args: Record<string, unknown>) => {
              calls.push(args);
              return { temperature: 21, sky: 'clear' };
            },
          },
        },
      ],
    });
    const content = await runner.finalContent();
    expect(calls).toHaveLength(1);
    expect(calls[0].city).toBe('Oslo');
    expect(content).toContain('get_weather returned');
    expect(content).toContain('"temperature":21');
    const messages = runner.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('streams tool calls so that the SDK assembles them', async () => {
    const stream = client.chat.completions.stream({ model: 'service-test', messages: [{ role: 'user', content: 'weather in "Rome" please' }], tools: [weatherTool] });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0].message.tool_calls![0];
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.id).toMatch(/^call_/);
    expect(JSON.parse(call.function.arguments)).toMatchObject({ city: 'Rome' });
  });

  it('produces JSON that validates against response_format json_schema', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string', maxLength: 10 }, tags: { type: 'array', items: { type: 'string' }, minItems: 2 }, score: { type: 'number', minimum: 0, maximum: 1 } }, required: ['title', 'tags', 'score'], additionalProperties: false };
    const answer = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'Summarise "Tollgate docs"' }], response_format: { type: 'json_schema', json_schema: { name: 'summary', schema, strict: true } } });
    const parsed = JSON.parse(answer.choices[0].message.content!);
    expect(new Ajv().compile(schema)(parsed)).toBe(true);
  });

  it('describes Data URL images (type, size, pixels) and does not fetch remote URLs', async () => {
    const answer = await client.chat.completions.create({
      model: 'service-test',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in these images?' }, { type: 'image_url', image_url: { url: pngDataUrl(64, 48) } }, { type: 'image_url', image_url: { url: 'https://example.invalid/cat.png' } }] }],
    });
    const text = answer.choices[0].message.content!;
    expect(text).toContain('Image 1 is a PNG image of 64×48 pixels');
    expect(text).toContain('Image 2 is a remote image at https://example.invalid/cat.png');
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(170);
  });

  it('refuses a bad Data URL with a 400 naming the part', async () => {
    const response = await raw(gw, 'POST', '/v1/chat/completions', {
      key: free.key,
      body: { model: 'service-test', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,@@notbase64' } }] }] },
    });
    const error = expectErrorShape(response, 400);
    expect(error.param).toBe('messages[0].content[1].image_url.url');
    const notImage = await raw(gw, 'POST', '/v1/chat/completions', {
      key: free.key,
      body: { model: 'service-test', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from('plain text').toString('base64')}` } }] }] },
    });
    expect(expectErrorShape(notImage, 400).param).toBe('messages[0].content[0].image_url.url');
  });

  it.each([
    ['bad JSON', '{"model": "service-test", "messages": [', null, 'invalid_json'],
    ['not an object', '[1,2]', null, 'invalid_json'],
    ['missing model', { messages: [{ role: 'user', content: 'x' }] }, 'model', 'missing_required_parameter'],
    ['model of wrong type', { model: 7, messages: [] }, 'model', 'invalid_type'],
    ['missing messages', { model: 'service-test' }, 'messages', 'missing_required_parameter'],
    ['empty messages', { model: 'service-test', messages: [] }, 'messages', 'invalid_value'],
    ['bad role', { model: 'service-test', messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', 'invalid_value'],
    ['tool message without call', { model: 'service-test', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_x', content: 'y' }] }, 'messages[1].tool_call_id', 'invalid_value'],
    ['unknown parameter', { model: 'service-test', messages: [{ role: 'user', content: 'x' }], frobnicate: true }, 'frobnicate', 'unknown_parameter'],
    ['temperature out of range', { model: 'service-test', messages: [{ role: 'user', content: 'x' }], temperature: 5 }, 'temperature', 'invalid_value'],
    ['max_tokens not an integer', { model: 'service-test', messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 }, 'max_tokens', 'invalid_type'],
    ['unknown model', { model: 'gpt-99', messages: [{ role: 'user', content: 'x' }] }, 'model', 'model_not_found'],
    ['stream_options without stream', { model: 'service-test', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } }, 'stream_options', 'invalid_value'],
  ])('%s: 400 with param and code', async (_label, body, param, code) => {
    const error = expectErrorShape(await raw(gw, 'POST', '/v1/chat/completions', { key: free.key, body }), 400, code);
    expect(error.param).toBe(param);
  });

  it('a model outside the plan is 402, surfaced by the SDK as an APIError with status 402', async () => {
    const error = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(402);
    expect(error.code).toBe('subscription_required');
    expect(error.param).toBe('model');
  });
});
