import { describe, expect, it } from 'vitest';
import { chatStopSequence as anthropicStop } from '../../providers/anthropic/response.ts';
import { chatStopSequence as bedrockStop } from '../../providers/bedrock/response.ts';
import { chatToMessage, stopOf, type StopSequences } from './response.ts';
import { ChatToMessagesStream } from './stream.ts';

const stops = (requested: string[], sequence: string | null | undefined): StopSequences => ({ requested, hit: () => (sequence === undefined ? null : { sequence }) });

describe('stopOf', () => {
  it('is stop_sequence when the backend said so, naming the sequence it named, or the request’s only one', () => {
    expect(stopOf('stop', false, stops(['a', 'b'], 'b'))).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'b' });
    expect(stopOf('stop', false, stops(['a'], null))).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'a' });
    expect(stopOf('stop', false, stops(['a', 'b'], null))).toEqual({ stop_reason: 'stop_sequence', stop_sequence: null });
  });

  it('is end_turn when the backend did not say, and a tool call, max_tokens or a refusal win over a stop', () => {
    expect(stopOf('stop', false, stops(['a'], undefined))).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
    expect(stopOf('stop', true, stops(['a'], 'a'))).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
    expect(stopOf('length', false, stops(['a'], 'a'))).toEqual({ stop_reason: 'max_tokens', stop_sequence: null });
    expect(stopOf('content_filter', false, stops(['a'], 'a'))).toEqual({ stop_reason: 'refusal', stop_sequence: null });
  });

  it('reaches the JSON answer and the stream’s message_delta, read when the turn ends', () => {
    const completion = { choices: [{ index: 0, message: { role: 'assistant', content: 'You said: ' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2 } };
    expect(chatToMessage(completion, 'm', 'r', stops(['alpha'], 'alpha'))).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'alpha' });
    let hit: string | undefined;
    const stream = new ChatToMessagesStream('m', 'r', 3, undefined, { requested: ['x', 'y'], hit: () => (hit === undefined ? null : { sequence: hit }) });
    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    let out = stream.feed(chunk({ role: 'assistant', content: 'Hi' }, null) + chunk({}, 'stop'));
    // The backend reports the hit with its finish; the Messages stream reads it at the end.
    hit = 'y';
    out += stream.feed('data: [DONE]\n\n');
    expect(out).toContain('"delta":{"stop_reason":"stop_sequence","stop_sequence":"y"}');
  });
});

describe('what the providers say about a stop sequence', () => {
  it('Anthropic names it; Bedrock names it when Claude was asked to, says only that it stopped otherwise', () => {
    expect(anthropicStop({ stop_reason: 'stop_sequence', stop_sequence: 'END' })).toEqual({ sequence: 'END' });
    expect(anthropicStop({ stop_reason: 'end_turn', stop_sequence: null })).toBeNull();
    expect(bedrockStop({ stopReason: 'stop_sequence', additionalModelResponseFields: { stop_sequence: 'END' } })).toEqual({ sequence: 'END' });
    expect(bedrockStop({ stopReason: 'stop_sequence' })).toEqual({ sequence: null });
    expect(bedrockStop({ stopReason: 'end_turn' })).toBeNull();
  });
});
