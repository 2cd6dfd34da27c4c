import { describe, expect, it } from 'vitest';
import { parseResponsesRequest } from '../../service-test/responses-request.ts';
import { newResponseBase } from './response.ts';
import { ChatToResponsesStream } from './stream.ts';

type Json = Record<string, any>;

const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (u: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: u })}\r\n\r\n`;
const call = (index: number, args: string, open?: { id: string; name: string }) => ({ tool_calls: [{ index, ...(open ? { id: open.id, type: 'function' } : {}), function: { ...(open ? { name: open.name } : {}), arguments: args } }] });

// Reasoning, text, then three parallel calls whose argument fragments interleave — one chunk even
// carries fragments of two calls — with a keep-alive and text written between them; then usage.
const CHAT = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ reasoning_content: 'Think ' }),
  chunk({ reasoning_content: 'hard.' }),
  chunk({ content: 'Calling. ' }),
  chunk(call(0, '{"city":', { id: 'call_a', name: 'get_weather' })),
  chunk(call(1, '', { id: 'call_b', name: 'get_time' })),
  chunk(call(1, '{"zone":')),
  chunk(call(0, '"Par')),
  ': keep-alive\n\n',
  chunk({ content: 'Also ' }),
  chunk(call(2, '{"input":"*** Begin', { id: 'call_c', name: 'apply_patch' })),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '"UTC"}' } }, { index: 0, function: { arguments: 'is"}' } }] }),
  chunk(call(2, ' Patch\\n"}')),
  chunk({}, 'tool_calls'),
  usage({ prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, prompt_tokens_details: { cached_tokens: 10 }, completion_tokens_details: { reasoning_tokens: 4 } }),
  'data: [DONE]\n\n',
].join('');

function base(body: Json = {}) {
  const request = parseResponsesRequest({ model: 'm', input: 'hi', ...body });
  return newResponseBase('model-x', request.settings, body.reasoning, new Set(['apply_patch']));
}

function translate(pieces: string[], body: Json = {}): string {
  const stream = new ChatToResponsesStream(base(body));
  return pieces.map((p) => stream.feed(p)).join('') + stream.end();
}

const events = (text: string): Json[] => text.split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\n')[1].slice(6)));
/** Ids and clocks are random per run: what must not differ between two splits is everything else. */
const stable = (text: string) => text.replace(/"(resp|rs|msg|fc|ctc)_[0-9a-f]+"/g, '"$1_x"').replace(/"(created_at|completed_at)":\d+/g, '"$1":0');

/** What an SDK's accumulator does: apply every event to the item its output_index names. */
function rebuild(out: Json[]): Json[] {
  const items: Json[] = [];
  for (const e of out) {
    if (e.type === 'response.output_item.added') items[e.output_index] = structuredClone(e.item);
    if (e.type === 'response.function_call_arguments.delta') items[e.output_index].arguments += e.delta;
    if (e.type === 'response.custom_tool_call_input.delta') items[e.output_index].input += e.delta;
    if (e.type === 'response.output_text.delta') items[e.output_index].text = (items[e.output_index].text ?? '') + e.delta;
  }
  return items;
}

describe('the Responses stream from a chat stream', () => {
  it('gives every parallel call its own item and all its argument fragments, however they interleave', () => {
    const out = events(translate([CHAT]));
    // Text closes when a call opens; calls stay open to the end: done events come in that order.
    const doneEvents = out.filter((e) => e.type === 'response.output_item.done');
    expect(doneEvents.map((e) => e.output_index)).toEqual([0, 1, 4, 2, 3, 5]);
    const done = doneEvents.sort((a, b) => a.output_index - b.output_index).map((e) => e.item);
    expect(done.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call', 'function_call', 'message', 'custom_tool_call']);
    expect(done[2]).toMatchObject({ call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(done[3]).toMatchObject({ call_id: 'call_b', name: 'get_time', arguments: '{"zone":"UTC"}' });
    expect(done[5]).toMatchObject({ call_id: 'call_c', name: 'apply_patch', input: '*** Begin Patch\n' });
    // Deltas land on the right item: what a client accumulates equals what each item's done says.
    const rebuilt = rebuild(out);
    expect(rebuilt[2].arguments).toBe('{"city":"Paris"}');
    expect(rebuilt[3].arguments).toBe('{"zone":"UTC"}');
    expect(rebuilt[5].input).toBe('*** Begin Patch\n');
    for (const e of out.filter((e) => e.type === 'response.function_call_arguments.done')) expect(e.arguments).toBe(done[e.output_index].arguments);
    // Each item's output_index is its place in the final Response.
    const final = out.at(-1)!;
    expect(final.type).toBe('response.completed');
    expect(final.response.output.map((item: Json) => item.id)).toEqual(done.map((item) => item.id));
    const added = out.filter((e) => e.type === 'response.output_item.added');
    expect(added.map((e) => e.output_index)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('gives the same events whatever the split of the chat stream, byte by byte included', () => {
    const whole = stable(translate([CHAT]));
    for (let at = 1; at < CHAT.length; at++) expect(stable(translate([CHAT.slice(0, at), CHAT.slice(at)]))).toBe(whole);
    expect(stable(translate([...CHAT]))).toBe(whole);
  });

  it('numbers events from 0 without a gap, starts with created and in_progress, and ends with completed', () => {
    const out = events(translate([...CHAT]));
    expect(out.map((e) => e.sequence_number)).toEqual(out.map((_, i) => i));
    expect(out.slice(0, 2).map((e) => e.type)).toEqual(['response.created', 'response.in_progress']);
    expect(out.filter((e) => e.type === 'response.completed')).toHaveLength(1);
  });

  it("reports usage in Responses' words, cached and reasoning tokens included", () => {
    const final = events(translate([CHAT])).at(-1)!;
    expect(final.response.usage).toEqual({ input_tokens: 30, input_tokens_details: { cached_tokens: 10, cache_write_tokens: 0 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 42 });
  });

  it('streams reasoning as reasoning_text content, opened by its content part', () => {
    const out = events(translate([CHAT]));
    const kinds = out.filter((e) => e.output_index === 0).map((e) => e.type);
    expect(kinds).toEqual(['response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.delta', 'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done']);
    expect(out.find((e) => e.type === 'response.reasoning_text.done')).toMatchObject({ text: 'Think hard.', content_index: 0 });
    expect(out.find((e) => e.type === 'response.output_item.done')!.item).toMatchObject({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Think hard.' }] });
  });

  it('streams reasoning as a summary when the request asks for one, and echoes the settings', () => {
    const out = events(translate([CHAT], { reasoning: { effort: 'high', summary: 'auto' } }));
    const kinds = out.filter((e) => e.output_index === 0).map((e) => e.type);
    expect(kinds).toEqual(['response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done']);
    expect(out.find((e) => e.type === 'response.output_item.done')!.item).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Think hard.' }] });
    expect(out.at(-1)!.response.reasoning).toEqual({ effort: 'high', summary: 'auto' });
  });

  it('ends a stream cut by the output limit as response.incomplete', () => {
    const cut = [chunk({ content: 'Partial' }), chunk({}, 'length'), 'data: [DONE]\n\n'].join('');
    const out = events(translate([cut]));
    expect(out.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } });
    expect(out.find((e) => e.type === 'response.output_item.done')!.item.status).toBe('incomplete');
  });

  it('ends a stream that never said [DONE] with an error event and no response.completed', () => {
    const out = events(translate([CHAT.slice(0, CHAT.indexOf('data: [DONE]'))]));
    expect(out.at(-1)).toMatchObject({ type: 'error', code: 'upstream_stream_error' });
    expect(out.some((e) => e.type === 'response.completed')).toBe(false);
  });
});
