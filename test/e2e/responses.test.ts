import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { pngDataUrl, weatherParameters } from '../helpers/fixtures.ts';

const free = newKey('free', 'free-co');
const colleague = newKey('colleague', 'free-co');
const stranger = newKey('stranger', 'other-co');
const paid = newKey('paid', 'paid-co');

const weatherTool = { type: 'function' as const, name: 'get_weather', description: 'Current weather for a city', parameters: weatherParameters, strict: true };

/** Splits a raw SSE body into its events: the `event:` name and the parsed `data:` JSON. */
function sseEvents(text: string): Array<{ event: string | null; data: any }> {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null;
      const data = lines.find((l) => l.startsWith('data: '));
      return { event, data: data === undefined ? undefined : JSON.parse(data.slice(6)) };
    });
}

/** The event types a plain text answer streams, with `deltas` delta events in the middle. */
function textEventOrder(deltas: number, last = 'response.completed'): string[] {
  return [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    ...Array<string>(deltas).fill('response.output_text.delta'),
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    last,
  ];
}

function expectContiguousSequence(events: Array<{ sequence_number: number }>) {
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
}

describe('responses with service-test', () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway([
      upstream('openai', 'https://api.openai.com/v1'),
      model('gpt-4o', [{ upstream: 'openai' }]),
      plan('pro', ['gpt-4o']),
      account('free-co'),
      account('other-co'),
      account('paid-co', 'pro'),
      apiKey(free),
      apiKey(colleague),
      apiKey(stranger),
      apiKey(paid),
    ]);
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  it('answers a string input in the Response shape, deterministically, with honest usage', async () => {
    const { data: first, response } = await client.responses.create({ model: 'service-test', input: 'Hello there' }).withResponse();
    const second = await client.responses.create({ model: 'service-test', input: 'Hello there' });
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(second.id).not.toBe(first.id);
    expect(first).toMatchObject({ object: 'response', status: 'completed', model: 'service-test', error: null, incomplete_details: null, instructions: null, previous_response_id: null, store: true, parallel_tool_calls: true, tool_choice: 'auto', tools: [], truncation: 'disabled', temperature: 1, top_p: 1, text: { format: { type: 'text' } }, reasoning: { effort: null, summary: null }, metadata: {} });
    expect(first.output).toHaveLength(1);
    const message = first.output[0];
    if (message.type !== 'message') throw new Error('expected a message item');
    expect(message).toMatchObject({ role: 'assistant', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [] }] });
    expect(message.id).toMatch(/^msg_/);
    expect(first.output_text).toContain('You wrote: "Hello there"');
    expect(first.output_text).toContain('The conversation has 1 message (1 user)');
    expect(second.output_text).toBe(first.output_text);
    const usage = first.usage!;
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details.cached_tokens).toBe(0);
    expect(usage.output_tokens_details.reasoning_tokens).toBe(0);
    // One message: 3 framing + "user" + "Hello there" + 3 priming.
    expect(usage.input_tokens).toBeGreaterThan(7);
    expect(usage.input_tokens).toBeLessThan(15);
    expect(usage.output_tokens).toBeGreaterThan(10);
  });

  it('echoes access_programs (null when not asked) and checks background_options, refusing the windows that need background mode', async () => {
    expect((await client.responses.create({ model: 'service-test', input: 'hi' })).access_programs).toBeNull();
    const asked = await client.responses.create({ model: 'service-test', input: 'hi', access_programs: { cyber: 'daybreak_blue' } });
    expect(asked.access_programs).toEqual({ cyber: 'daybreak_blue' });
    expect((await client.responses.retrieve(asked.id)).access_programs).toEqual({ cyber: 'daybreak_blue' });
    const soonest = await client.responses.create({ model: 'service-test', input: 'hi', background_options: { completion_window: 'soonest', continuation_id: 'batch-7' } });
    expect(soonest.status).toBe('completed');
    const body = { model: 'service-test', input: 'hi' };
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { ...body, access_programs: { cyber: 'daybreak_green' } } }), 400, 'invalid_value').param).toBe('access_programs.cyber');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { ...body, access_programs: 'cyber' } }), 400, 'invalid_type').param).toBe('access_programs');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { ...body, background_options: { completion_window: '8h' } } }), 400, 'unsupported_parameter').param).toBe('background_options.completion_window');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { ...body, background_options: { completion_window: '3h' } } }), 400, 'invalid_value').param).toBe('background_options.completion_window');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { ...body, background_options: { window: 'soonest' } } }), 400, 'unknown_parameter').param).toBe('background_options.window');
  });

  it('counts instructions as a system message and echoes them', async () => {
    const plain = await client.responses.create({ model: 'service-test', input: 'Hi' });
    const instructed = await client.responses.create({ model: 'service-test', instructions: 'Answer in French.', input: 'Hi' });
    expect(instructed.instructions).toBe('Answer in French.');
    expect(instructed.output_text).toContain('The conversation has 2 messages (1 system, 1 user)');
    expect(instructed.usage!.input_tokens).toBeGreaterThan(plain.usage!.input_tokens + 3);
  });

  it('accepts item arrays: typed and untyped messages, history, and an input_image Data URL', async () => {
    const answer = await client.responses.create({
      model: 'service-test',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Describe images exactly.' }] },
        { role: 'user', content: 'Earlier question' },
        { type: 'message', id: 'msg_earlier', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Earlier answer', annotations: [] }] },
        { role: 'user', content: [{ type: 'input_text', text: 'What is in these images?' }, { type: 'input_image', image_url: pngDataUrl(64, 48), detail: 'auto' }, { type: 'input_image', image_url: 'https://example.invalid/cat.png', detail: 'low' }] },
      ],
    });
    expect(answer.output_text).toContain('You wrote: "What is in these images?"');
    expect(answer.output_text).toContain('Image 1 is a PNG image of 64×48 pixels');
    expect(answer.output_text).toContain('Image 2 is a remote image at https://example.invalid/cat.png');
    expect(answer.output_text).toContain('The conversation has 4 messages (1 developer, 2 user, 1 assistant)');
    // Two low-detail images at 85 tokens each dominate the count.
    expect(answer.usage!.input_tokens).toBeGreaterThan(170);
  });

  it('continues from previous_response_id with the whole stored chain, without carrying instructions over', async () => {
    const first = await client.responses.create({ model: 'service-test', instructions: 'Be brief.', input: 'My name is Ada' });
    expect(first.output_text).toContain('The conversation has 2 messages (1 system, 1 user)');
    const second = await client.responses.create({ model: 'service-test', previous_response_id: first.id, input: 'What is my name?' });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.instructions).toBeNull();
    expect(second.output_text).toContain('You wrote: "What is my name?"');
    expect(second.output_text).toContain('The conversation has 3 messages (2 user, 1 assistant)');
    // The earlier answer is part of the prompt now, so the prompt grew by more than the new question.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.output_tokens);
    // Resolved recursively: the third turn sees both earlier exchanges; new instructions apply only to it.
    const third = await client.responses.create({ model: 'service-test', previous_response_id: second.id, instructions: 'Be kind.', input: 'And again?' });
    expect(third.output_text).toContain('The conversation has 6 messages (1 system, 3 user, 2 assistant)');
    // Another key of the same account shares the account's stored responses.
    const fromColleague = await gw.client(colleague.key).responses.create({ model: 'service-test', previous_response_id: first.id, input: 'What is my name?' });
    expect(fromColleague.output_text).toBe(second.output_text);
  });

  it('does not store a response with store: false, so it cannot be continued or retrieved', async () => {
    const unstored = await client.responses.create({ model: 'service-test', input: 'forget me', store: false });
    expect(unstored).toMatchObject({ store: false });
    const continued = await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'service-test', previous_response_id: unstored.id, input: 'next' } });
    const error = expectErrorShape(continued, 400, 'previous_response_not_found');
    expect(error.param).toBe('previous_response_id');
    expect(error.message).toContain("pass it in 'input'");
    expectErrorShape(await raw(gw, 'GET', `/v1/responses/${unstored.id}`, { key: free.key }), 404, 'response_not_found');
    // Continuing from a stored response with store: false still works; only the new one is not kept.
    const stored = await client.responses.create({ model: 'service-test', input: 'keep me' });
    const fromStored = await client.responses.create({ model: 'service-test', previous_response_id: stored.id, input: 'next', store: false });
    expect(fromStored.output_text).toContain('3 messages');
  });

  it("keeps another account's responses invisible: 400 to continue, 404 to read or delete", async () => {
    const mine = await client.responses.create({ model: 'service-test', input: 'private' });
    const theirs = gw.client(stranger.key);
    const continued = await theirs.responses.create({ model: 'service-test', previous_response_id: mine.id, input: 'steal' }).catch((e) => e);
    expect(continued).toBeInstanceOf(OpenAI.BadRequestError);
    expect(continued.code).toBe('previous_response_not_found');
    expect(continued.param).toBe('previous_response_id');
    expectErrorShape(await raw(gw, 'GET', `/v1/responses/${mine.id}`, { key: stranger.key }), 404, 'response_not_found');
    expectErrorShape(await raw(gw, 'DELETE', `/v1/responses/${mine.id}`, { key: stranger.key }), 404, 'response_not_found');
    // The failed delete removed nothing.
    expect((await client.responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('retrieves and deletes a stored response', async () => {
    const created = await client.responses.create({ model: 'service-test', input: 'remember this', metadata: { ticket: 'T-1' } });
    const retrieved = await client.responses.retrieve(created.id);
    expect(retrieved).toEqual(created);
    expect(retrieved.metadata).toEqual({ ticket: 'T-1' });
    const deleted = await raw(gw, 'DELETE', `/v1/responses/${created.id}`, { key: free.key });
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({ id: created.id, object: 'response', deleted: true });
    const again = await client.responses.retrieve(created.id).catch((e) => e);
    expect(again).toBeInstanceOf(OpenAI.NotFoundError);
    const other = await client.responses.create({ model: 'service-test', input: 'delete me via the SDK' });
    await client.responses.delete(other.id);
    expectErrorShape(await raw(gw, 'GET', `/v1/responses/${other.id}`, { key: free.key }), 404);
    expectErrorShape(await raw(gw, 'DELETE', `/v1/responses/${other.id}`, { key: free.key }), 404);
    const continued = await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'service-test', previous_response_id: other.id, input: 'x' } });
    expectErrorShape(continued, 400, 'previous_response_not_found');
  });

  it('completes the function-calling loop: function_call item, then function_call_output, then text', async () => {
    const question = 'What is the weather in "Paris" in celsius for 3 days?';
    const tools = [weatherTool, { type: 'function' as const, name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string', format: 'email' } }, required: ['to'], additionalProperties: false }, strict: true }];
    const first = await client.responses.create({ model: 'service-test', input: question, tools });
    expect(first.status).toBe('completed');
    expect(first.output_text).toBe('');
    expect(first.output).toHaveLength(1);
    const call = first.output[0];
    if (call.type !== 'function_call') throw new Error(`expected a function_call, got ${call.type}`);
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(call.id).toMatch(/^fc_/);
    expect(call.call_id).toMatch(/^call_/);
    const args = JSON.parse(call.arguments);
    expect(new Ajv().compile(weatherParameters)(args)).toBe(true);
    expect(args).toEqual({ city: 'Paris', unit: 'celsius', days: 3 });
    expect(first.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'Current weather for a city', parameters: weatherParameters, strict: true },
      { type: 'function', name: 'send_email', description: null, parameters: tools[1].parameters, strict: true },
    ]);

    const result = JSON.stringify({ temperature: 21, sky: 'clear' });
    const stateful = await client.responses.create({ model: 'service-test', previous_response_id: first.id, tools, input: [{ type: 'function_call_output', call_id: call.call_id, output: result }] });
    expect(stateful.output_text).toBe('Based on the tool results: get_weather returned {"temperature":21,"sky":"clear"}.');
    // The same loop without stored state: the client resends the history with the output items.
    const stateless = await client.responses.create({
      model: 'service-test',
      store: false,
      tools,
      // The SDK types output items and input items separately; on the wire they are the same objects.
      input: [{ role: 'user', content: question }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: result }],
    });
    expect(stateless.output_text).toBe(stateful.output_text);
    expect(stateless.usage!.input_tokens).toBe(stateful.usage!.input_tokens);
  });

  it('honours tool_choice and parallel_tool_calls', async () => {
    const forced = await client.responses.create({ model: 'service-test', input: 'Tell me a joke', tools: [weatherTool], tool_choice: 'required' });
    expect(forced.output[0].type).toBe('function_call');
    const named = await client.responses.create({ model: 'service-test', input: 'Tell me a joke', tools: [weatherTool], tool_choice: { type: 'function', name: 'get_weather' } });
    expect(named.tool_choice).toEqual({ type: 'function', name: 'get_weather' });
    expect(named.output[0].type).toBe('function_call');
    const none = await client.responses.create({ model: 'service-test', input: 'weather in Oslo?', tools: [weatherTool], tool_choice: 'none' });
    expect(none.output[0].type).toBe('message');
    const timeTool = { type: 'function' as const, name: 'get_time', parameters: { type: 'object', properties: {} }, strict: false };
    const both = await client.responses.create({ model: 'service-test', input: 'weather and time in Oslo?', tools: [weatherTool, timeTool] });
    expect(both.output.map((item) => item.type === 'function_call' && item.name)).toEqual(['get_weather', 'get_time']);
    const one = await client.responses.create({ model: 'service-test', input: 'weather and time in Oslo?', tools: [weatherTool, timeTool], parallel_tool_calls: false });
    expect(one.output).toHaveLength(1);
    expect(one.parallel_tool_calls).toBe(false);
  });

  it('cuts the answer at max_output_tokens and reports the response as incomplete', async () => {
    const full = await client.responses.create({ model: 'service-test', input: 'Tell me everything about everything' });
    const cut = await client.responses.create({ model: 'service-test', input: 'Tell me everything about everything', max_output_tokens: 16 });
    expect(cut.status).toBe('incomplete');
    expect(cut.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(cut.max_output_tokens).toBe(16);
    expect(cut.output[0].type === 'message' && cut.output[0].status).toBe('incomplete');
    expect(cut.usage!.output_tokens).toBe(16);
    expect(full.output_text.startsWith(cut.output_text)).toBe(true);
    expect(cut.output_text.length).toBeLessThan(full.output_text.length);
    // Nothing to cut: complete as usual.
    const roomy = await client.responses.create({ model: 'service-test', input: 'Tell me everything about everything', max_output_tokens: 4096 });
    expect(roomy.status).toBe('completed');
    expect(roomy.output_text).toBe(full.output_text);
  });

  it('produces JSON that validates against a json_schema text format, and the SDK parses it', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string', maxLength: 10 }, tags: { type: 'array', items: { type: 'string' }, minItems: 2 }, score: { type: 'number', minimum: 0, maximum: 1 } }, required: ['title', 'tags', 'score'], additionalProperties: false };
    const format = { type: 'json_schema' as const, name: 'summary', schema, strict: true };
    const answer = await client.responses.create({ model: 'service-test', input: 'Summarise "Tollgate docs"', text: { format } });
    expect(answer.text).toEqual({ format, verbosity: 'medium' });
    const parsed = JSON.parse(answer.output_text);
    expect(new Ajv().compile(schema)(parsed)).toBe(true);
    const viaParse = await client.responses.parse({ model: 'service-test', input: 'Summarise "Tollgate docs"', text: { format } });
    expect(viaParse.output_parsed).toEqual(parsed);
    const jsonObject = await client.responses.create({ model: 'service-test', input: 'hi', text: { format: { type: 'json_object' } } });
    expect(JSON.parse(jsonObject.output_text)).toHaveProperty('answer');
  });

  it('streams with responses.stream(): the full event order, contiguous sequence numbers, the same answer', async () => {
    const nonStream = await client.responses.create({ model: 'service-test', instructions: 'Be brief.', input: 'Stream this please' });
    const stream = client.responses.stream({ model: 'service-test', instructions: 'Be brief.', input: 'Stream this please' });
    const events: Array<{ type: string; sequence_number: number }> = [];
    const deltas: string[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'response.output_text.delta') {
        deltas.push(event.delta);
        expect(event).toMatchObject({ output_index: 0, content_index: 0, logprobs: [] });
      }
    }
    const final = await stream.finalResponse();
    expect(deltas.length).toBeGreaterThan(3);
    expect(events.map((e) => e.type)).toEqual(textEventOrder(deltas.length));
    expectContiguousSequence(events);
    expect(deltas.join('')).toBe(nonStream.output_text);
    expect(final.output_text).toBe(nonStream.output_text);
    expect(final.status).toBe('completed');
    expect(final.usage).toEqual(nonStream.usage);
    expect(final.instructions).toBe('Be brief.');
    // Every event names the same item, and the created event's response is still empty.
    const itemIds = new Set(events.flatMap((e: any) => (e.item_id ? [e.item_id] : e.item ? [e.item.id] : [])));
    expect(itemIds).toEqual(new Set([final.output[0].id]));
    const created = events[0] as any;
    expect(created.response).toMatchObject({ id: final.id, status: 'in_progress', output: [], usage: null });
    // A streamed response is stored like any other.
    const continued = await client.responses.create({ model: 'service-test', previous_response_id: final.id, input: 'next' });
    expect(continued.output_text).toContain('3 messages (2 user, 1 assistant)');
  });

  it('streams function calls: arguments deltas between added and done, assembled by the SDK', async () => {
    const stream = client.responses.stream({ model: 'service-test', input: 'weather in "Rome" please', tools: [weatherTool] });
    const types: string[] = [];
    const events: Array<{ sequence_number: number }> = [];
    stream.on('event', (event) => {
      types.push(event.type);
      events.push(event);
    });
    const final = await stream.finalResponse();
    const deltas = types.filter((t) => t === 'response.function_call_arguments.delta').length;
    expect(deltas).toBeGreaterThan(0);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      ...Array<string>(deltas).fill('response.function_call_arguments.delta'),
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expectContiguousSequence(events);
    const call = final.output[0];
    if (call.type !== 'function_call') throw new Error('expected a function_call');
    expect(JSON.parse(call.arguments)).toMatchObject({ city: 'Rome' });
    expect(call.status).toBe('completed');
  });

  it('ends a cut stream with response.incomplete', async () => {
    const stream = client.responses.stream({ model: 'service-test', input: 'Tell me everything about everything', max_output_tokens: 16 });
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    const final = await stream.finalResponse();
    expect(types.at(-1)).toBe('response.incomplete');
    expect(types).toEqual(textEventOrder(types.filter((t) => t === 'response.output_text.delta').length, 'response.incomplete'));
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('frames SSE with event: and data: lines matching each type, and no [DONE]', async () => {
    const response = await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'service-test', stream: true, input: 'frame me' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('x-request-id')).toBe(response.headers.get('x-service-request-id'));
    expect(response.text).not.toContain('[DONE]');
    for (const block of response.text.split('\n\n').filter(Boolean)) expect(block).toMatch(/^event: [a-z_.]+\ndata: \{.*\}$/);
    const events = sseEvents(response.text);
    for (const { event, data } of events) expect(event).toBe(data.type);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    const completed = events.at(-1)!.data;
    expect(completed.type).toBe('response.completed');
    expect(completed.response.usage.total_tokens).toBeGreaterThan(0);
    const textDone = events.find((e) => e.data.type === 'response.output_text.done')!.data;
    expect(completed.response.output[0].content[0].text).toBe(textDone.text);
  });

  it('replays a stored response as a stream on GET ?stream=true, honouring starting_after', async () => {
    const created = await client.responses.create({ model: 'service-test', input: 'replay me' });
    const replay = client.responses.stream({ response_id: created.id });
    const replayed = await replay.finalResponse();
    expect(replayed.output_text).toBe(created.output_text);
    expect(replayed.id).toBe(created.id);
    const tail = await raw(gw, 'GET', `/v1/responses/${created.id}?stream=true&starting_after=3`, { key: free.key });
    const events = sseEvents(tail.text);
    expect(events[0].data.sequence_number).toBe(4);
    expect(events.at(-1)!.data.type).toBe('response.completed');
    expectErrorShape(await raw(gw, 'GET', `/v1/responses/${created.id}?stream=maybe`, { key: free.key }), 400, 'invalid_value');
  });

  it('refuses a function_call_output that answers no function_call', async () => {
    const orphan = await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'service-test', input: [{ role: 'user', content: 'x' }, { type: 'function_call_output', call_id: 'call_nowhere', output: '1' }] } });
    const error = expectErrorShape(orphan, 400, 'invalid_value');
    expect(error.param).toBe('input[1].call_id');
    expect(error.message).toContain('call_nowhere');
    // A call later in the input does not count: the output must come after its call.
    const early = await raw(gw, 'POST', '/v1/responses', {
      key: free.key,
      body: { model: 'service-test', input: [{ type: 'function_call_output', call_id: 'call_1', output: '1' }, { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' }] },
    });
    expect(expectErrorShape(early, 400).param).toBe('input[0].call_id');
  });

  it('sends an upstream-backed model to the proxy, not to service-test (here: no credential configured, 502)', async () => {
    const response = await raw(gw, 'POST', '/v1/responses', { key: paid.key, body: { model: 'gpt-4o', input: 'x' } });
    expectErrorShape(response, 502, 'upstream_credentials_missing');
    expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'gpt-4o', input: 'x' } }), 402, 'subscription_required');
  });

  const input = 'x';
  it.each([
    ['bad JSON', '{"model": "service-test", "input": ', null, 'invalid_json'],
    ['missing model', { input }, 'model', 'missing_required_parameter'],
    ['missing input', { model: 'service-test' }, 'input', 'missing_required_parameter'],
    ['input of wrong type', { model: 'service-test', input: 7 }, 'input', 'invalid_type'],
    ['empty input array', { model: 'service-test', input: [] }, 'input', 'invalid_value'],
    ['unknown parameter', { model: 'service-test', input, messages: [] }, 'messages', 'unknown_parameter'],
    ['bad role', { model: 'service-test', input: [{ role: 'robot', content: 'x' }] }, 'input[0].role', 'invalid_value'],
    ['unknown item type', { model: 'service-test', input: [{ type: 'reasoning', summary: [] }] }, 'input[0].type', 'invalid_value'],
    ['chat content part', { model: 'service-test', input: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }, 'input[0].content[0].type', 'invalid_value'],
    ['input_text in assistant content', { model: 'service-test', input: [{ role: 'assistant', content: [{ type: 'input_text', text: 'x' }] }] }, 'input[0].content[0].type', 'invalid_value'],
    ['input_text without text', { model: 'service-test', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }, 'input[0].content[0].text', 'missing_required_parameter'],
    ['bad Data URL', { model: 'service-test', input: [{ role: 'user', content: [{ type: 'input_text', text: 'x' }, { type: 'input_image', image_url: 'data:image/png;base64,@@', detail: 'auto' }] }] }, 'input[0].content[1].image_url', 'invalid_value'],
    ['function_call without call_id', { model: 'service-test', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id', 'missing_required_parameter'],
    ['function_call with object arguments', { model: 'service-test', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: {} }] }, 'input[0].arguments', 'invalid_type'],
    ['function_call_output without output', { model: 'service-test', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }, { type: 'function_call_output', call_id: 'c' }] }, 'input[1].output', 'missing_required_parameter'],
    ['chat-shaped tool', { model: 'service-test', input, tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, 'tools[0].name', 'missing_required_parameter'],
    ['hosted tool', { model: 'service-test', input, tools: [{ type: 'web_search' }] }, 'tools[0].type', 'invalid_value'],
    ['tool_choice names no tool', { model: 'service-test', input, tools: [weatherTool], tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice.name', 'invalid_value'],
    ['json_schema without schema', { model: 'service-test', input, text: { format: { type: 'json_schema', name: 's' } } }, 'text.format.schema', 'missing_required_parameter'],
    ['unknown text format', { model: 'service-test', input, text: { format: { type: 'yaml' } } }, 'text.format.type', 'invalid_value'],
    ['max_output_tokens below 16', { model: 'service-test', input, max_output_tokens: 4 }, 'max_output_tokens', 'invalid_value'],
    ['max_output_tokens not an integer', { model: 'service-test', input, max_output_tokens: 20.5 }, 'max_output_tokens', 'invalid_type'],
    ['temperature out of range', { model: 'service-test', input, temperature: 3 }, 'temperature', 'invalid_value'],
    ['instructions of wrong type', { model: 'service-test', input, instructions: ['x'] }, 'instructions', 'invalid_type'],
    ['store of wrong type', { model: 'service-test', input, store: 'yes' }, 'store', 'invalid_type'],
    ['metadata value not a string', { model: 'service-test', input, metadata: { n: 1 } }, 'metadata.n', 'invalid_type'],
    ['unknown include', { model: 'service-test', input, include: ['everything'] }, 'include[0]', 'invalid_value'],
    ['bad truncation', { model: 'service-test', input, truncation: 'middle' }, 'truncation', 'invalid_value'],
    ['stream_options without stream', { model: 'service-test', input, stream_options: { include_obfuscation: false } }, 'stream_options', 'invalid_value'],
    ['background mode', { model: 'service-test', input, background: true }, 'background', 'unsupported_parameter'],
    ['unknown previous_response_id', { model: 'service-test', input, previous_response_id: 'resp_nope' }, 'previous_response_id', 'previous_response_not_found'],
    ['unknown model', { model: 'gpt-99', input }, 'model', 'model_not_found'],
  ])('%s: 400 with param and code', async (_label, body, param, code) => {
    const error = expectErrorShape(await raw(gw, 'POST', '/v1/responses', { key: free.key, body }), 400, code);
    expect(error.param).toBe(param);
  });

  it('rejects with a 400 before any stream starts', async () => {
    const response = await raw(gw, 'POST', '/v1/responses', { key: free.key, body: { model: 'service-test', stream: true, input: [] } });
    expectErrorShape(response, 400, 'invalid_value');
  });

  it('needs a key for every responses route', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/responses', { body: { model: 'service-test', input } }), 401);
    expectErrorShape(await raw(gw, 'GET', '/v1/responses/resp_x'), 401);
  });
});
