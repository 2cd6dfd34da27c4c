// The Messages API stream from a chat stream that interleaves what Anthropic's keeps apart: argument
// fragments of parallel tool calls in any order, text arriving between them. No fragment is lost and
// the shape stays Anthropic's (blocks opened one at a time, sequential indices, input_json_delta).
import { describe, expect, it } from 'vitest';
import { ChatToMessagesStream } from './stream.ts';

const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const call = (index: number, args: string, head?: { id: string; name: string }) => chunk({ tool_calls: [{ index, ...(head ? { id: head.id, type: 'function' } : {}), function: { ...(head ? { name: head.name } : {}), arguments: args } }] });

// Three parallel calls whose fragments come round-robin, a text piece between two of them, and a
// chunk carrying fragments of two calls at once.
const INTERLEAVED = [
  chunk({ role: 'assistant', content: 'Looking up. ' }),
  call(0, '', { id: 'call_a', name: 'weather' }),
  call(1, '{"ci', { id: 'call_b', name: 'time' }),
  call(0, '{"city":'),
  call(2, '{}', { id: 'call_c', name: 'noop' }),
  chunk({ content: 'Still here. ' }),
  call(1, 'ty":"Oslo"'),
  call(0, '"Paris"'),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '}' } }, { index: 0, function: { arguments: '}' } }] }),
  chunk({}, 'tool_calls'),
  'data: [DONE]\n\n',
].join('');

function translate(pieces: string[]): string {
  const stream = new ChatToMessagesStream('model-x', 'req1', 25);
  return pieces.map((p) => stream.feed(p)).join('') + stream.end();
}

const events = (text: string) => text.split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\n')[1].slice(6)));

/** Checks Anthropic's shape and rebuilds the message as the SDK would: blocks in index order, tool input parsed. */
function rebuild(text: string) {
  const blocks: Array<Record<string, any>> = [];
  let open: number | null = null;
  for (const event of events(text)) {
    if (event.type === 'content_block_start') {
      expect(open, 'a block opened before the previous one closed').toBeNull();
      expect(event.index).toBe(blocks.length);
      open = event.index;
      blocks.push({ ...event.content_block, json: '' });
    } else if (event.type === 'content_block_delta') {
      expect(event.index).toBe(open);
      const block = blocks[event.index];
      if (event.delta.type === 'input_json_delta') block.json += event.delta.partial_json;
      else if (event.delta.type === 'text_delta') block.text += event.delta.text;
      else throw new Error(`unexpected delta ${event.delta.type}`);
    } else if (event.type === 'content_block_stop') {
      expect(event.index).toBe(open);
      open = null;
    }
  }
  expect(open).toBeNull();
  return blocks.map(({ json, ...block }) => (block.type === 'tool_use' ? { ...block, input: JSON.parse(json) } : block));
}

describe('the Messages API stream from interleaved chat chunks', () => {
  it('keeps every tool fragment and every piece of text, in blocks Anthropic shapes', () => {
    const out = translate([INTERLEAVED]);
    expect(rebuild(out)).toEqual([
      { type: 'text', text: 'Looking up. ' },
      { type: 'tool_use', id: 'call_a', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'time', input: { city: 'Oslo' } },
      { type: 'tool_use', id: 'call_c', name: 'noop', input: {} },
      { type: 'text', text: 'Still here. ' },
    ]);
    const all = events(out);
    expect(all.filter((e) => e.type === 'message_start')).toHaveLength(1);
    expect(all.slice(-2).map((e) => e.type)).toEqual(['message_delta', 'message_stop']);
    expect(all.at(-2).delta.stop_reason).toBe('tool_use');
  });

  it('gives the same events whatever the split, byte by byte included', () => {
    const whole = translate([INTERLEAVED]);
    for (let at = 1; at < INTERLEAVED.length; at++) expect(translate([INTERLEAVED.slice(0, at), INTERLEAVED.slice(at)])).toBe(whole);
    expect(translate([...INTERLEAVED])).toBe(whole);
  });

  it('opens with message_start before any chunk, then pings; never a second message_start', () => {
    const stream = new ChatToMessagesStream('model-x', 'req1', 25);
    const opening = events(stream.start());
    expect(opening).toMatchObject([{ type: 'message_start', message: { usage: { input_tokens: 25, output_tokens: 0 } } }]);
    expect(stream.start()).toBe('');
    expect(events(stream.keepAlive())).toEqual([{ type: 'ping' }]);
    const rest = events(stream.feed(chunk({ content: 'hi' }, 'stop') + 'data: [DONE]\n\n'));
    expect(rest.map((e) => e.type)).toEqual(['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(stream.keepAlive()).toBe('');
  });

  it('pings a silent stream with message_start first when nothing went before', () => {
    const stream = new ChatToMessagesStream('model-x', 'req1', 25);
    expect(events(stream.keepAlive()).map((e) => e.type)).toEqual(['message_start', 'ping']);
  });
});

describe('what is held behind an open tool block', () => {
  it('is bounded: past the bound the stream ends with an error event, not a short answer', () => {
    const stream = new ChatToMessagesStream('model-x', 'req1', 25, 20);
    const out = events(stream.feed(INTERLEAVED) + stream.end());
    // The text and the second call's fragments held behind the first call pass 20 characters.
    expect(out.at(-1)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(out.some((e) => e.type === 'message_stop')).toBe(false);
    const roomy = events(new ChatToMessagesStream('model-x', 'req1', 25, 1000).feed(INTERLEAVED));
    expect(roomy.at(-1).type).toBe('message_stop');
  });
});
