import { describe, expect, it } from 'vitest';
import { factsOfObject, responseFinishReason, scanAnswerBytes } from './answer-facts.ts';

const big = (object: object) => Buffer.from(JSON.stringify(object));

describe('answer facts', () => {
  it('reads every choice of a parsed chat answer, and a Responses status in chat words', () => {
    expect(factsOfObject({ model: 'm-1', choices: [{ index: 0, finish_reason: 'stop' }, { index: 1, finish_reason: 'tool_calls' }, { index: 2, finish_reason: null }] }, 'chat')).toEqual({
      model: 'm-1',
      finishReasons: [{ index: 0, reason: 'stop' }, { index: 1, reason: 'tool_calls' }],
    });
    expect(responseFinishReason({ status: 'completed' })).toBe('stop');
    expect(responseFinishReason({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } })).toBe('length');
    expect(responseFinishReason({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } })).toBe('content_filter');
    expect(responseFinishReason({ status: 'in_progress' })).toBeUndefined();
    expect(factsOfObject({ model: 'x'.repeat(1000) }, 'other')!.model).toHaveLength(128);
  });

  it('scans a large answer\'s bytes: model at the head (chat) or the end (embeddings), finish reasons at the end', () => {
    const chat = big({ id: 'c', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, message: { content: 'z'.repeat(50_000) }, finish_reason: 'length' }], usage: { prompt_tokens: 1 } });
    expect(scanAnswerBytes(chat, 'chat', undefined)).toEqual({ model: 'gpt-4o-2024-08-06', finishReasons: [{ index: 0, reason: 'length' }] });
    const embeddings = big({ object: 'list', data: [{ embedding: Array.from({ length: 5000 }, () => 0.5) }], model: 'text-embedding-3-small', usage: { prompt_tokens: 1 } });
    expect(scanAnswerBytes(embeddings, 'other', undefined)).toEqual({ model: 'text-embedding-3-small' });
  });

  it('does not take a client\'s text for a key, nor an escaped or null value', () => {
    // The content says "finish_reason" (as a whole string value) and contains an escaped key; neither is read.
    const tricky = big({ model: 'm', pad: 'p'.repeat(20_000), choices: [{ message: { content: 'finish_reason' }, finish_reason: null }, { message: { content: '"finish_reason":"evil"' }, finish_reason: 'st\\op' }, { finish_reason: 'stop' }] });
    expect(scanAnswerBytes(tricky, 'chat', undefined)).toEqual({ model: 'm', finishReasons: [{ index: 0, reason: 'stop' }] });
  });
});
