import { describe, expect, it } from 'vitest';
import { ChatToMessagesStream } from './stream.ts';

const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
// Reasoning, text, two parallel tool calls (the second's id-less fragments routed by index), a usage chunk, [DONE].
const CHAT = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ reasoning_content: 'Let me think.' }),
  chunk({ content: 'Calling both. ' }),
  chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'alpha', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
  ': keep-alive\n\n',
  chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'beta', arguments: '{}' } }] }),
  chunk({}, 'stop'),
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42, prompt_tokens_details: { cached_tokens: 10 } } })}\r\n\r\n`,
  'data: [DONE]\n\n',
].join('');

function translate(pieces: string[]): string {
  const stream = new ChatToMessagesStream('model-x', 'req1', 25);
  return pieces.map((p) => stream.feed(p)).join('') + stream.end();
}

const events = (text: string) => text.split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\n')[1].slice(6)));

describe('the Messages API stream from a chat stream', () => {
  it('gives one message_start, sequential blocks closed in turn, tool_use as the stop reason and Anthropic usage', () => {
    const out = events(translate([CHAT]));
    expect(out.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'ping', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_stop',
      'message_delta', 'message_stop',
    ]);
    expect(out.filter((e) => e.type === 'content_block_start').map((e) => [e.index, e.content_block.type])).toEqual([[0, 'thinking'], [1, 'text'], [2, 'tool_use'], [3, 'tool_use']]);
    expect(out.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { input_tokens: 20, cache_read_input_tokens: 10, output_tokens: 12 } });
  });

  it('gives the same events whatever the split of the chat stream, byte by byte included', () => {
    const whole = translate([CHAT]);
    for (let at = 1; at < CHAT.length; at++) expect(translate([CHAT.slice(0, at), CHAT.slice(at)])).toBe(whole);
    expect(translate([...CHAT])).toBe(whole);
  });

  it('ends a stream that never said [DONE] with an error event and no message_stop', () => {
    const out = events(translate([CHAT.slice(0, CHAT.indexOf('data: [DONE]'))]));
    expect(out.at(-1)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(out.some((e) => e.type === 'message_stop')).toBe(false);
  });
});
