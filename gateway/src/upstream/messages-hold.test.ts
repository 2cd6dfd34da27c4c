import { describe, expect, it } from 'vitest';
import { ProviderStreamError } from '../providers/provider.ts';
import { MAX_HELD_BYTES, MessagesOpening } from './messages-hold.ts';

const event = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
const START = event('message_start', { message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 1 } } });
const PING = event('ping', {});

/** Feeds `text` to a fresh opening in reads of `size` bytes; what each read said. */
function feed(text: string, size = Infinity): { opening: MessagesOpening; said: boolean[] } {
  const opening = new MessagesOpening();
  const bytes = Buffer.from(text);
  const said: boolean[] = [];
  for (let i = 0; i < bytes.length; i += Math.min(size, bytes.length)) said.push(opening.feed(bytes.subarray(i, i + size)));
  return { opening, said };
}

describe('MessagesOpening', () => {
  it('holds message_start, pings, comments and empty text or thinking blocks; keeps every byte in order', () => {
    const opening = START + PING + ': keep-alive\n\n' + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    const { opening: read, said } = feed(opening, 7);
    expect(said.every((content) => !content)).toBe(true);
    expect(read.bytes().toString()).toBe(opening);
    expect(feed(START + event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } })).said).toEqual([false]);
  });

  it('counts a delta, a block that carries something, a block stop, message_delta, message_stop and events it does not know', () => {
    const contents = [
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
      event('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } }),
      event('content_block_start', { index: 0, content_block: { type: 'redacted_thinking', data: 'abc' } }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }),
      event('message_stop', {}),
      event('some_future_event', {}),
    ];
    for (const content of contents) {
      // Split anywhere, the content is seen when its event is complete, not before.
      const text = START + PING + content;
      const { said } = feed(text, 5);
      expect(said.at(-1), content).toBe(true);
      expect(said.slice(0, -1).every((c) => !c), content).toBe(true);
    }
  });

  it('an error event before content throws it as the provider’s error, with its type', () => {
    const overloaded = event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
    const opening = new MessagesOpening();
    expect(opening.feed(Buffer.from(START))).toBe(false);
    const error = (() => {
      try {
        opening.feed(Buffer.from(overloaded));
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ProviderStreamError);
    expect(error).toMatchObject({ code: 'upstream_overloaded', message: 'Anthropic: Overloaded' });
  });

  it('an end before content is a truncated stream; content as the very last bytes, without a blank line, is not', () => {
    const cut = new MessagesOpening();
    cut.feed(Buffer.from(START + PING));
    expect(() => cut.end()).toThrow(expect.objectContaining({ code: 'upstream_stream_truncated' }));
    const whole = new MessagesOpening();
    expect(whole.feed(Buffer.from(START + 'event: message_stop\ndata: {"type":"message_stop"}'))).toBe(false);
    expect(() => whole.end()).not.toThrow();
  });

  it('stops holding past MAX_HELD_BYTES of opening: the stream is committed to its target', () => {
    const opening = new MessagesOpening();
    const pings = Buffer.from(PING.repeat(Math.ceil(MAX_HELD_BYTES / PING.length / 4)));
    const said: boolean[] = [];
    for (let held = 0; held <= MAX_HELD_BYTES; held += pings.length) said.push(opening.feed(pings));
    expect(said.at(-1)).toBe(true);
    expect(said.slice(0, -1).every((c) => !c)).toBe(true);
    expect(opening.bytes().length).toBe(pings.length * said.length);
  });
});
