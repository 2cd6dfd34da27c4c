import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../provider.ts';
import { chatResponse, finishReason, openAIUsage } from './response.ts';

const ctx: AnswerContext = { publicModel: 'claude', providerModel: 'claude-sonnet-4-6', requestId: 'req-9', created: 5, includeUsage: false, responseHeaders: {} };
const message = (content: unknown[], stop_reason: string, usage: Record<string, unknown> = { input_tokens: 1, output_tokens: 1 }) => ({ id: 'msg_x', type: 'message', role: 'assistant', content, stop_reason, usage });

describe('anthropic chatResponse', () => {
  it('decides the finish reason from what came back', () => {
    expect(finishReason('refusal', false)).toBe('content_filter');
    expect(finishReason('model_context_window_exceeded', false)).toBe('length');
    expect(finishReason('pause_turn', false)).toBe('stop');
    expect(finishReason('stop_sequence', false)).toBe('stop');
    expect(finishReason('max_tokens', true)).toBe('tool_calls');
    expect(finishReason('something_new', false)).toBe('stop');
  });

  it('answers a refusal as content_filter with the text so far', () => {
    const answer = chatResponse(message([{ type: 'text', text: 'I can’t help' }], 'refusal'), ctx);
    expect(answer.choices).toEqual([{ index: 0, message: { role: 'assistant', content: 'I can’t help', refusal: null }, logprobs: null, finish_reason: 'content_filter' }]);
  });

  it('gives tool calls with null content, text kept when both came', () => {
    const calls = chatResponse(message([{ type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }], 'tool_use'), ctx);
    expect((calls.choices as Array<{ message: unknown }>)[0]!.message).toEqual({ role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] });
    const both = chatResponse(message([{ type: 'text', text: 'Calling.' }, { type: 'tool_use', id: 'toolu_2', name: 'g', input: {} }], 'tool_use'), ctx);
    expect((both.choices as Array<{ message: { content: unknown } }>)[0]!.message.content).toBe('Calling.');
  });

  it('counts usage in OpenAI\'s meaning, whatever fields are missing', () => {
    expect(openAIUsage({})).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
    expect(openAIUsage({ input_tokens: 3, cache_read_input_tokens: null, cache_creation_input_tokens: 7, output_tokens: 2 })).toMatchObject({ prompt_tokens: 10, total_tokens: 12, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 7 } });
  });

  it('refuses a 200 that is not a message with a 502', () => {
    expect(() => chatResponse({ type: 'error' }, ctx)).toThrow(expect.objectContaining({ status: 502 }));
  });
});
