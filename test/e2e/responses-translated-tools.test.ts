// Tools on Responses over chat completions (an OpenAI-compatible upstream marked `responsesAPI:
// false`), driven with the official openai SDK: parallel calls whose argument fragments the upstream
// interleaves each arrive whole in their own item, and `custom` (freeform) tools — Codex's
// apply_patch — go out as functions of one string input and come back as custom_tool_call items.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { newKey } from '../helpers/gateway.ts';
import { chatOnlyGateway } from '../helpers/chat-only-gateway.ts';

const key = newKey('k', 'acme');

type ToolDelta = { index: number; id?: string; name?: string; arguments: string };

/** A chat stream answering with the given tool-call deltas, each chunk carrying one or more calls' fragments. */
function toolStream(chunks: ToolDelta[][]) {
  return (_req: unknown, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const frame = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'chatcmpl-p', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(frame({ role: 'assistant', content: null }));
    for (const calls of chunks) {
      res.write(frame({ tool_calls: calls.map(({ index, id, name, arguments: args }) => ({ index, ...(id ? { id, type: 'function' } : {}), function: { ...(name ? { name } : {}), arguments: args } })) }));
    }
    res.write(frame({}, 'tool_calls'));
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-p', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [], usage: { prompt_tokens: 40, completion_tokens: 30, total_tokens: 70 } })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

/** A whole chat completion calling `name` with `args`. */
function toolAnswer(name: string, args: string) {
  return (_req: unknown, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'chatcmpl-c', object: 'chat.completion', created: 1, model: 'chat-model', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_p1', type: 'function', function: { name, arguments: args } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } }));
  };
}

const WEATHER = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
const functionTools = ['get_weather', 'get_time', 'get_news'].map((name) => ({ type: 'function' as const, name, parameters: WEATHER, strict: true }));
const PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Hello "world"\n*** End Patch\n';
const applyPatch = { type: 'custom' as const, name: 'apply_patch', description: 'Edit files with a patch.', format: { type: 'grammar' as const, syntax: 'lark' as const, definition: 'start: "*** Begin Patch" LF hunk+ "*** End Patch" LF?' } };

describe('tools on Responses over chat completions', () => {
  const suite = chatOnlyGateway(key);
  const { sentChat } = suite;

  it('streams three parallel calls whose fragments interleave: each item gets all of its own arguments', async () => {
    suite.upstream.behave({
      respond: toolStream([
        [{ index: 0, id: 'call_a', name: 'get_weather', arguments: '{"ci' }],
        [{ index: 1, id: 'call_b', name: 'get_time', arguments: '' }],
        [{ index: 1, arguments: '{"city":"Tok' }, { index: 0, arguments: 'ty":"Par' }],
        [{ index: 2, id: 'call_c', name: 'get_news', arguments: '{"city":' }],
        [{ index: 0, arguments: 'is"}' }],
        [{ index: 2, arguments: '"Lima"}' }, { index: 1, arguments: 'yo"}' }],
      ]),
    });
    const stream = suite.client.responses.stream({ model: 'llama', input: 'Weather, time and news?', tools: functionTools });
    const deltas = new Map<string, string>();
    const done = new Map<string, string>();
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.delta') deltas.set(event.item_id, (deltas.get(event.item_id) ?? '') + event.delta);
      if (event.type === 'response.function_call_arguments.done') done.set(event.item_id, event.arguments);
    }
    const final = await stream.finalResponse();
    const calls = final.output.filter((item) => item.type === 'function_call');
    expect(calls.map((c) => [c.call_id, c.name, c.arguments])).toEqual([
      ['call_a', 'get_weather', '{"city":"Paris"}'],
      ['call_b', 'get_time', '{"city":"Tokyo"}'],
      ['call_c', 'get_news', '{"city":"Lima"}'],
    ]);
    for (const c of calls) {
      expect(deltas.get(c.id!)).toBe(c.arguments);
      expect(done.get(c.id!)).toBe(c.arguments);
    }
    // The stored Response says the same, and a continuation replays the three calls as one turn.
    const stored = await suite.client.responses.retrieve(final.id);
    expect(stored.output.filter((item) => item.type === 'function_call').map((c) => c.arguments)).toEqual(calls.map((c) => c.arguments));
    suite.upstream.behave({});
    await suite.client.responses.create({ model: 'llama', previous_response_id: final.id, tools: functionTools, input: calls.map((c) => ({ type: 'function_call_output' as const, call_id: c.call_id, output: 'ok' })) });
    expect(sentChat().messages[1].tool_calls.map((c: { function: { arguments: string } }) => c.function.arguments)).toEqual(calls.map((c) => c.arguments));
  });

  it('sends a custom tool as a one-string function and answers its call as a custom_tool_call, then takes its output', async () => {
    suite.upstream.behave({ respond: toolAnswer('apply_patch', JSON.stringify({ input: PATCH })) });
    const first = await suite.client.responses.create({ model: 'llama', input: 'Add hello.txt', tools: [applyPatch] });
    const call = first.output.find((item) => item.type === 'custom_tool_call');
    expect(call).toMatchObject({ type: 'custom_tool_call', call_id: 'call_p1', name: 'apply_patch', input: PATCH });
    expect(first.tools).toEqual([applyPatch]);
    const tool = sentChat().tools[0];
    expect(tool).toMatchObject({ type: 'function', function: { name: 'apply_patch', parameters: { properties: { input: { type: 'string' } }, required: ['input'] } } });
    expect(tool.function.description).toContain(applyPatch.format.definition);

    suite.upstream.behave({});
    const second = await suite.client.responses.create({ model: 'llama', previous_response_id: first.id, tools: [applyPatch], input: [{ type: 'custom_tool_call_output', call_id: 'call_p1', output: 'Success. Updated hello.txt' }] });
    expect(second.output_text).toBe('answer from chat-only');
    expect(sentChat().messages.slice(-2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_p1', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) } }] },
      { role: 'tool', tool_call_id: 'call_p1', content: 'Success. Updated hello.txt' },
    ]);
    const items = await suite.client.responses.inputItems.list(second.id);
    expect(items.data[0]).toMatchObject({ type: 'custom_tool_call_output', call_id: 'call_p1', output: 'Success. Updated hello.txt' });
  });

  it('streams a custom tool call beside a function call: input events for the one, argument events for the other', async () => {
    const encoded = JSON.stringify({ input: PATCH });
    suite.upstream.behave({
      respond: toolStream([
        [{ index: 0, id: 'call_p', name: 'apply_patch', arguments: encoded.slice(0, 20) }],
        [{ index: 1, id: 'call_w', name: 'get_weather', arguments: '{"city":' }],
        [{ index: 0, arguments: encoded.slice(20) }, { index: 1, arguments: '"Oslo"}' }],
      ]),
    });
    const stream = suite.client.responses.stream({ model: 'llama', input: 'patch and weather', tools: [applyPatch, functionTools[0]] });
    const deltas: string[] = [];
    for await (const event of stream) if (event.type === 'response.custom_tool_call_input.delta') deltas.push(event.delta);
    const final = await stream.finalResponse();
    // The input itself, decoded from the arguments' JSON as each fragment came: not one delta at the end.
    expect(deltas.join('')).toBe(PATCH);
    expect(deltas).toEqual([JSON.parse(`${encoded.slice(0, 20)}"}`).input, PATCH.slice(JSON.parse(`${encoded.slice(0, 20)}"}`).input.length)]);
    expect(final.output.map((item) => item.type)).toEqual(['custom_tool_call', 'function_call']);
    expect(final.output[0]).toMatchObject({ call_id: 'call_p', name: 'apply_patch', input: PATCH });
    expect(final.output[1]).toMatchObject({ call_id: 'call_w', arguments: '{"city":"Oslo"}' });
  });

  it('runs two Codex turns: store false, reasoning summary, shell and apply_patch, the previous output passed back with the results', async () => {
    const shell = { type: 'function' as const, name: 'shell', description: 'Runs a shell command', parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'], additionalProperties: false }, strict: false };
    const codex = { model: 'llama', instructions: 'You are Codex.', tools: [shell, applyPatch], tool_choice: 'auto' as const, parallel_tool_calls: false, reasoning: { effort: 'medium' as const, summary: 'auto' as const }, store: false, include: ['reasoning.encrypted_content' as const], prompt_cache_key: 'session-1' };
    suite.upstream.behave({
      respond: (_req: unknown, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const frame = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(frame({ role: 'assistant', reasoning_content: 'The user wants a file. ' }));
        res.write(frame({ reasoning_content: 'I will patch it.' }));
        res.write(frame({ tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) } }] }));
        res.write(frame({}, 'tool_calls'));
        res.end('data: [DONE]\n\n');
      },
    });
    const first = await suite.client.responses.stream({ ...codex, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Add hello.txt' }] }] }).finalResponse();
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'custom_tool_call']);
    expect(first.output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: 'The user wants a file. I will patch it.' }] });
    expect(first.output[1]).toMatchObject({ call_id: 'call_x', input: PATCH });
    expect(sentChat()).toMatchObject({ reasoning_effort: 'medium', parallel_tool_calls: false, tool_choice: 'auto' });
    await expect(suite.client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });

    suite.upstream.behave({});
    const history = [{ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: 'Add hello.txt' }] }, ...first.output, { type: 'custom_tool_call_output' as const, call_id: 'call_x', output: 'Success.' }];
    const second = await suite.client.responses.stream({ ...codex, input: history as OpenAI.Responses.ResponseInput }).finalResponse();
    expect(second.output_text).toBe('chat-only-0 chat-only-1 chat-only-2 chat-only-3 chat-only-4 ');
    expect(sentChat().messages).toEqual([
      { role: 'system', content: 'You are Codex.' },
      { role: 'user', content: 'Add hello.txt' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: PATCH }) } }] },
      { role: 'tool', tool_call_id: 'call_x', content: 'Success.' },
    ]);
  });

  it('streams reasoning as reasoning_text content when no summary is asked, which the SDK accumulates', async () => {
    suite.upstream.behave({
      respond: (_req: unknown, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const frame = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'chatcmpl-r', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(frame({ role: 'assistant', reasoning_content: 'Two and ' }));
        res.write(frame({ reasoning_content: 'two make four.' }));
        res.write(frame({ content: '4' }, 'stop'));
        res.write(`data: ${JSON.stringify({ id: 'chatcmpl-r', object: 'chat.completion.chunk', created: 1, model: 'chat-model', choices: [], usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21, completion_tokens_details: { reasoning_tokens: 8 } } })}\n\n`);
        res.end('data: [DONE]\n\n');
      },
    });
    const stream = suite.client.responses.stream({ model: 'llama', input: '2+2?', reasoning: { effort: 'low' } });
    let thought = '';
    for await (const event of stream) if (event.type === 'response.reasoning_text.delta') thought += event.delta;
    const final = await stream.finalResponse();
    expect(thought).toBe('Two and two make four.');
    expect(final.output[0]).toMatchObject({ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'Two and two make four.' }] });
    expect(final.output_text).toBe('4');
    expect(final.usage).toMatchObject({ output_tokens: 12, output_tokens_details: { reasoning_tokens: 8 } });
    expect(sentChat().reasoning_effort).toBe('low');
  });

  it("refuses the tools OpenAI runs, local_shell included, with a 400 naming the tool; a custom tool's bad grammar too", async () => {
    for (const tool of [{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'local_shell' }]) {
      const error = await suite.client.responses.create({ model: 'llama', input: 'x', tools: [applyPatch, tool as never] }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error.param).toBe('tools[1].type');
      expect(error.message).toContain(`'${tool.type}'`);
    }
    const bad = await suite.client.responses.create({ model: 'llama', input: 'x', tools: [{ type: 'custom', name: 'p', format: { type: 'grammar', syntax: 'ebnf' as never, definition: 'x' } }] }).catch((e) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.error.param).toBe('tools[0].format');
    expect(suite.upstream.requests).toHaveLength(0);
  });
});
