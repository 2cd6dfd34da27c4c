import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProviderStreamError, type AnswerContext } from '../provider.ts';
import { encodeMessage, MAX_MESSAGE } from './frames.ts';
import { ConverseStreamTranslator } from './stream.ts';

const FIXTURES = new URL('../../../../test/fixtures/providers/bedrock/', import.meta.url);
const ctx: AnswerContext = {
  publicModel: 'claude-tools',
  providerModel: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
  requestId: 'req-1',
  created: 1_700_000_000,
  includeUsage: true,
  responseHeaders: { 'x-amzn-requestid': 'amzn-req-42' },
};

function run(chunks: Buffer[], context = ctx): string {
  const translator = new ConverseStreamTranslator(context);
  let out = '';
  for (const chunk of chunks) out += translator.feed(chunk);
  return out + translator.end();
}

function event(type: string, payload: Record<string, unknown>): Buffer {
  return encodeMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, { ...payload, p: 'xyz' });
}

function frames(sse: string): any[] {
  return sse.split('\n\n').filter(Boolean).map((frame) => (frame === 'data: [DONE]' ? '[DONE]' : JSON.parse(frame.slice('data: '.length))));
}

const textStream = [
  event('messageStart', { role: 'assistant' }),
  event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } }),
  event('contentBlockStop', { contentBlockIndex: 0 }),
];

describe('ConverseStream → OpenAI chunks (golden: Appendix D of providers.md)', () => {
  const bin = readFileSync(new URL('tool-stream/upstream-response.bin', FIXTURES));
  const expected = readFileSync(new URL('tool-stream/expected.sse', FIXTURES), 'utf8');

  it('translates the recorded stream to the expected SSE', () => {
    expect(run([bin])).toBe(expected);
  });

  it('gives the same output for the stream split at every byte position', () => {
    for (let at = 1; at < bin.length; at++) {
      expect(run([bin.subarray(0, at), bin.subarray(at)]), `split at ${at}`).toBe(expected);
    }
  });

  it('gives the same output fed one byte at a time', () => {
    expect(run([...bin].map((byte) => Buffer.from([byte])))).toBe(expected);
  });

  it('maps block indices to tool indices, emits "{}" for a tool without arguments, and ends with usage then [DONE]', () => {
    const chunks = frames(expected);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const starts = chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).filter((t: any) => t.id);
    expect(starts.map((t: any) => [t.index, t.function.name])).toEqual([[0, 'top_song'], [1, 'hello'], [2, 'now']]);
    const args = (k: number) => chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).filter((t: any) => t.index === k).map((t: any) => t.function.arguments).join('');
    expect([args(0), args(1), args(2)]).toEqual(['{"sign":"WZPZ"}', '{"sign":"world"}', '{}']);
    expect(chunks.at(-3).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
    expect(chunks.at(-2)).toMatchObject({ choices: [], usage: { prompt_tokens: 170, completion_tokens: 45, total_tokens: 215, prompt_tokens_details: { cached_tokens: 20 } } });
    expect(chunks.at(-1)).toBe('[DONE]');
    expect(new Set(chunks.slice(0, -1).map((c) => c.id))).toEqual(new Set(['chatcmpl-amzn-req-42']));
  });

  it('sends no usage chunk and no usage fields when the client did not ask', () => {
    const out = frames(run([bin], { ...ctx, includeUsage: false }));
    expect(out.some((c) => c !== '[DONE]' && 'usage' in c)).toBe(false);
    expect(out.at(-1)).toBe('[DONE]');
  });
});

describe('ConverseStream failures', () => {
  it('an exception frame is a ProviderStreamError carrying its type', () => {
    const exception = encodeMessage({ ':exception-type': 'throttlingException', ':content-type': 'application/json', ':message-type': 'exception' }, { message: 'Too many requests' });
    const translator = new ConverseStreamTranslator(ctx);
    translator.feed(Buffer.concat(textStream));
    const error = (() => {
      try {
        translator.feed(exception);
      } catch (e) {
        return e as ProviderStreamError;
      }
    })();
    expect(error).toBeInstanceOf(ProviderStreamError);
    expect(error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(error?.message).toMatch(/Too many requests \(ThrottlingException\)/);
  });

  it('a modelStreamErrorException and an error frame are failures too', () => {
    const modelError = encodeMessage({ ':exception-type': 'modelStreamErrorException', ':message-type': 'exception' }, { message: 'boom' });
    expect(() => new ConverseStreamTranslator(ctx).feed(modelError)).toThrow(ProviderStreamError);
    const errorFrame = encodeMessage({ ':error-code': 'InternalFailure', ':error-message': 'bad', ':message-type': 'error' }, undefined);
    expect(() => new ConverseStreamTranslator(ctx).feed(errorFrame)).toThrow(/InternalFailure: bad/);
  });

  it('chunks read together with a failure go out first; the failure follows on the next call', () => {
    const exception = encodeMessage({ ':exception-type': 'modelStreamErrorException', ':message-type': 'exception' }, { message: 'boom' });
    const translator = new ConverseStreamTranslator(ctx);
    expect(translator.feed(Buffer.concat([...textStream, exception]))).toContain('Hello');
    expect(() => translator.end()).toThrow(/boom/);
  });

  it('a body that ends before messageStop is a failure, never [DONE]', () => {
    const translator = new ConverseStreamTranslator(ctx);
    expect(translator.feed(Buffer.concat(textStream))).toContain('Hello');
    expect(() => translator.end()).toThrow(/before messageStop/);
  });

  it('a body cut inside a frame is a failure', () => {
    const whole = Buffer.concat([...textStream, event('messageStop', { stopReason: 'end_turn' })]);
    const translator = new ConverseStreamTranslator(ctx);
    translator.feed(whole.subarray(0, whole.length - 5));
    expect(() => translator.end()).toThrow(/in the middle of a message/);
  });

  it('a bad message CRC or prelude CRC is a ProviderStreamError', () => {
    const bad = Buffer.from(event('messageStart', { role: 'assistant' }));
    bad[bad.length - 1] ^= 1;
    expect(() => new ConverseStreamTranslator(ctx).feed(bad)).toThrow(/checksum/);
    const badPrelude = Buffer.from(event('messageStart', { role: 'assistant' }));
    badPrelude[9] ^= 1;
    expect(() => new ConverseStreamTranslator(ctx).feed(badPrelude)).toThrow(ProviderStreamError);
  });

  it('a frame declaring more than the cap is refused before its bytes are held', () => {
    const huge = Buffer.alloc(8);
    huge.writeUInt32BE(MAX_MESSAGE + 1, 0);
    expect(() => new ConverseStreamTranslator(ctx).feed(huge)).toThrow(/more than/);
  });

  it('messageStop without metadata ends well, with no usage known', () => {
    const translator = new ConverseStreamTranslator(ctx);
    const out = translator.feed(Buffer.concat([...textStream, event('messageStop', { stopReason: 'max_tokens' })])) + translator.end();
    expect(frames(out).at(-2).choices[0].finish_reason).toBe('length');
    expect(frames(out).at(-1)).toBe('[DONE]');
    expect(translator.finishReason()).toBe('length');
    expect(translator.usage()).toBeNull();
  });

  it('guardrail_intervened is content_filter; reasoning deltas become reasoning_content', () => {
    const translator = new ConverseStreamTranslator({ ...ctx, includeUsage: false });
    const out = translator.feed(
      Buffer.concat([
        event('messageStart', { role: 'assistant' }),
        event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'hmm' } } }),
        event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig' } } }),
        event('messageStop', { stopReason: 'guardrail_intervened' }),
        event('metadata', { usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } }),
      ]),
    );
    const chunks = frames(out);
    expect(chunks[1].choices[0].delta).toEqual({ reasoning_content: 'hmm' });
    expect(chunks.at(-2).choices[0].finish_reason).toBe('content_filter');
    expect(translator.usage()).toMatchObject({ prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 });
  });
});
