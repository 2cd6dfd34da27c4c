import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../provider.ts';
import { ProviderStreamError } from '../provider.ts';
import { chatStream } from './stream.ts';

const ctx: AnswerContext = { publicModel: 'claude', providerModel: 'claude-sonnet-4-6', requestId: 'req-1', created: 1, includeUsage: false, responseHeaders: {} };
const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const start = event('message_start', { type: 'message_start', message: { id: 'msg_1', content: [], usage: { input_tokens: 10, output_tokens: 1 } } });
const text = event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
  + event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } });

function caught(run: () => unknown): ProviderStreamError {
  try {
    run();
  } catch (error) {
    if (error instanceof ProviderStreamError) return error;
    throw error;
  }
  throw new Error('expected a ProviderStreamError');
}

describe('anthropic stream failures', () => {
  it('raises an error event as a ProviderStreamError, with its type', () => {
    const stream = chatStream(ctx);
    const out = stream.feed(Buffer.from(start + text));
    expect(out).toContain('"content":"Hi"');
    const error = caught(() => stream.feed(Buffer.from(event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))));
    expect(error).toMatchObject({ code: 'upstream_overloaded', type: 'server_error', message: 'Anthropic: Overloaded' });
  });

  it('refuses a body that ends before message_stop, even after the stop reason', () => {
    const stream = chatStream(ctx);
    stream.feed(Buffer.from(start + text + event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } })));
    expect(caught(() => stream.end()).code).toBe('upstream_stream_truncated');
    // The usage so far is still known, for limits to settle on.
    expect(stream.usage()).toMatchObject({ prompt_tokens: 10, completion_tokens: 3 });
  });

  it('counts usage from message_delta replacing, not adding, and ignores what follows message_stop', () => {
    const stream = chatStream({ ...ctx, includeUsage: true });
    const out = stream.feed(Buffer.from(start + text
      + event('message_delta', { type: 'message_delta', delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 3 } })
      + event('message_delta', { type: 'message_delta', delta: {}, usage: { output_tokens: 5, input_tokens: 12 } })
      + event('message_stop', { type: 'message_stop' })
      + event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'late' } })));
    expect(out).not.toContain('late');
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(stream.end()).toBe('');
    expect(stream.finishReason()).toBe('length');
    expect(stream.usage()).toMatchObject({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it('refuses an event that never ends beyond its size bound', () => {
    const stream = chatStream(ctx);
    stream.feed(Buffer.from(start));
    const huge = Buffer.alloc(1024 * 1024, 'a');
    expect(() => {
      stream.feed(Buffer.from('event: content_block_delta\ndata: '));
      for (let i = 0; i < 10; i++) stream.feed(huge);
    }).toThrow(ProviderStreamError);
  });
});

describe('anthropic stream: frames before a failure in the same read', () => {
  it('returns them, and raises the failure on the next call', () => {
    const stream = chatStream(ctx);
    const out = stream.feed(Buffer.from(start + text + event('error', { type: 'error', error: { type: 'api_error', message: 'boom' } })));
    expect(out).toContain('"content":"Hi"');
    expect(caught(() => stream.end())).toMatchObject({ message: 'Anthropic: boom' });
    expect(caught(() => stream.feed(Buffer.from('')))).toMatchObject({ message: 'Anthropic: boom' });
  });
});

describe('anthropic stream: bounded state', () => {
  it('streams a thinking text past its bound without holding it, and returns no block that could not be whole', () => {
    const stream = chatStream(ctx);
    stream.feed(Buffer.from(start + event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } })));
    const piece = 'x'.repeat(1024 * 1024);
    let streamed = 0;
    for (let i = 0; i < 5; i++) streamed += stream.feed(Buffer.from(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: piece } }))).length;
    expect(streamed).toBeGreaterThan(5 * piece.length);
    const stop = stream.feed(Buffer.from(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } }) + event('content_block_stop', { type: 'content_block_stop', index: 0 })));
    expect(stop).toBe('');
  });
});
