// `output_config` on the Messages API: its effort sets how hard adaptive thinking works on any backend;
// its other fields (structured output's `format`) only Anthropic honours, so a translated request
// naming one is a 400 naming it, while a request relayed to Anthropic (lenient) is Anthropic's to judge.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { messagesToChat } from './request.ts';

const base = { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('output_config through the Messages dialect', () => {
  it('effort sets adaptive thinking’s reasoning_effort, and nothing without thinking', () => {
    expect(messagesToChat({ ...base, thinking: { type: 'adaptive' }, output_config: { effort: 'max' } }).chat.reasoning_effort).toBe('max');
    expect(messagesToChat({ ...base, thinking: { type: 'adaptive' } }).chat.reasoning_effort).toBe('medium');
    expect(messagesToChat({ ...base, output_config: { effort: 'low' } }).chat.reasoning_effort).toBeUndefined();
  });

  it('refuses what a translated backend cannot honour, naming the field; a relayed request is left to Anthropic', () => {
    const format = { ...base, output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } };
    const refused = (() => {
      try {
        messagesToChat(format);
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).param).toBe('output_config.format');
    expect(() => messagesToChat({ ...base, thinking: { type: 'adaptive' }, output_config: { effort: 'extreme' } })).toThrow(/output_config.effort/);
    expect(() => messagesToChat(format, true)).not.toThrow();
  });
});
