import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import { chatRequest, PLACEHOLDER_TOOL } from './request.ts';

function upstream(drop = false): Upstream {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'claude' }, spec: { provider: 'anthropic', ...(drop ? { dropUnsupportedParams: true } : {}) } } as Upstream;
}
const user = [{ role: 'user', content: 'hi' }];
const build = (body: Record<string, unknown>, model = 'claude-sonnet-4-6', drop = false) => JSON.parse(chatRequest(body, { model, upstream: upstream(drop) }, false).body);
function refusal(body: Record<string, unknown>, model = 'claude-sonnet-4-6'): ApiError {
  try {
    build(body, model);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a 400');
}

describe('anthropic chatRequest: parameters with no equivalent', () => {
  it.each([
    ['n', { n: 2 }],
    ['logit_bias', { logit_bias: { '50256': -100 } }],
    ['logprobs', { logprobs: true }],
    ['top_logprobs', { top_logprobs: 2 }],
    ['seed', { seed: 7 }],
    ['presence_penalty', { presence_penalty: 0.5 }],
    ['temperature', { temperature: 1.5 }],
    ['top_p', { temperature: 0.5, top_p: 0.9 }],
    ['modalities', { modalities: ['text', 'audio'] }],
  ])('answers 400 naming %s, or drops it with dropUnsupportedParams', (param, extra) => {
    const error = refusal({ messages: user, ...extra });
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.code).toBe('unsupported_parameter');
    const dropped = build({ messages: user, ...extra }, 'claude-sonnet-4-6', true);
    expect(dropped[param]).toBeUndefined();
    expect(dropped.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('keeps what is neutral: n 1, empty logit_bias, zero penalties, temperature 1 with top_p on older models', () => {
    const body = build({ messages: user, n: 1, logit_bias: {}, presence_penalty: 0, logprobs: false, temperature: 1, top_p: 0.5 }, 'claude-3-5-haiku-20241022');
    expect(body).toMatchObject({ temperature: 1, top_p: 0.5, max_tokens: 8192 });
  });

  it('answers 400 for audio input and uploaded file ids, naming the part', () => {
    const audio = refusal({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] });
    expect(audio.param).toBe('messages[0].content[0].type');
    const file = refusal({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'file', file: { file_id: 'file-1' } }] }] });
    expect(file.param).toBe('messages[0].content[1].file.file_id');
    const svg = refusal({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/svg+xml;base64,PHN2Zz4=' } }] }] });
    expect(svg.param).toBe('messages[0].content[0].image_url.url');
  });

  it('answers 400 for tool arguments that are not a JSON object', () => {
    const error = refusal({ messages: [...user, { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] });
    expect(error.param).toBe('messages[1].tool_calls[0].function.arguments');
  });

  it('refuses non-function tools', () => {
    expect(refusal({ messages: user, tools: [{ type: 'custom', custom: { name: 'x' } }] }).param).toBe('tools[0].type');
  });
});

describe('anthropic chatRequest: mapping', () => {
  it('supplies max_tokens per model when the client sends none, and prefers max_completion_tokens', () => {
    expect(build({ messages: user }, 'claude-opus-4-6').max_tokens).toBe(128000);
    expect(build({ messages: user }, 'claude-haiku-4-5-20251001').max_tokens).toBe(64000);
    expect(build({ messages: user }, 'claude-opus-4-20250514').max_tokens).toBe(32000);
    expect(build({ messages: user }, 'claude-future-9').max_tokens).toBe(16384);
    expect(build({ messages: user, max_tokens: 10, max_completion_tokens: 20 }).max_tokens).toBe(20);
  });

  it('maps tool_choice and parallel_tool_calls', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    expect(build({ messages: user, tools, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    expect(build({ messages: user, tools, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    expect(build({ messages: user, tools, tool_choice: { type: 'function', function: { name: 'f' } } }).tool_choice).toEqual({ type: 'tool', name: 'f' });
    expect(build({ messages: user, tools, parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(build({ messages: user, tools }).tool_choice).toBeUndefined();
    expect(build({ messages: user, tool_choice: 'auto' }).tool_choice).toBeUndefined();
  });

  it('offers a placeholder tool when the history has tool calls but the request no tools', () => {
    const body = build({ messages: [...user, { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c1', content: 'done' }] });
    expect(body.tools).toEqual([PLACEHOLDER_TOOL]);
    expect(body.tool_choice).toEqual({ type: 'none' });
  });

  it('maps reasoning_effort to a clamped thinking budget, or adaptive thinking with an effort', () => {
    expect(build({ messages: user, reasoning_effort: 'low' }, 'claude-haiku-4-5').thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(build({ messages: user, reasoning_effort: 'high', max_completion_tokens: 2000 }, 'claude-haiku-4-5').thinking).toEqual({ type: 'enabled', budget_tokens: 1500 });
    expect(build({ messages: user, reasoning_effort: 'minimal', max_completion_tokens: 1100 }, 'claude-haiku-4-5').thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(refusal({ messages: user, reasoning_effort: 'low', max_completion_tokens: 1000 }, 'claude-haiku-4-5').param).toBe('reasoning_effort');
    const adaptive = build({ messages: user, reasoning_effort: 'medium' }, 'claude-opus-4-6');
    expect(adaptive.thinking).toEqual({ type: 'adaptive' });
    expect(adaptive.output_config).toEqual({ effort: 'medium' });
    expect(build({ messages: user, reasoning_effort: 'none' }, 'claude-opus-4-6').thinking).toBeUndefined();
    expect(refusal({ messages: user, reasoning_effort: 'high' }, 'claude-3-5-haiku').param).toBe('reasoning_effort');
  });

  it('answers 400 for what Anthropic refuses with thinking, or keeps the request valid when dropping', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    expect(refusal({ messages: user, reasoning_effort: 'low', temperature: 0.3 }, 'claude-haiku-4-5').param).toBe('temperature');
    expect(refusal({ messages: user, reasoning_effort: 'low', tools, tool_choice: 'required' }, 'claude-haiku-4-5').param).toBe('tool_choice');
    expect(build({ messages: user, reasoning_effort: 'low', temperature: 1 }, 'claude-haiku-4-5')).toMatchObject({ temperature: 1, thinking: { type: 'enabled' } });
    const lenient = build({ messages: user, reasoning_effort: 'low', temperature: 0.3, top_k: 5 }, 'claude-haiku-4-5', true);
    expect(lenient.temperature).toBeUndefined();
    expect(lenient.top_k).toBeUndefined();
    const forced = build({ messages: user, reasoning_effort: 'low', tools, tool_choice: 'required' }, 'claude-haiku-4-5', true);
    expect(forced.tool_choice).toEqual({ type: 'any' });
    expect(forced.thinking).toBeUndefined();
    const adaptive = build({ messages: user, reasoning_effort: 'high', tools, tool_choice: 'required' }, 'claude-opus-4-6', true);
    expect(adaptive.thinking).toBeUndefined();
    expect(adaptive.output_config).toBeUndefined();
  });

  it('replays thinking blocks a client sends back, first in their assistant turn', () => {
    const body = build({
      reasoning_effort: 'low',
      tools: [{ type: 'function', function: { name: 'f' } }],
      messages: [
        ...user,
        { role: 'assistant', content: null, thinking_blocks: [{ type: 'thinking', thinking: 't', signature: 's' }], tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ],
    }, 'claude-haiku-4-5');
    expect(body.messages[1].content).toEqual([{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'c1', name: 'f', input: {} }]);
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('maps json_object to a structured output that allows any object', () => {
    expect(build({ messages: user, response_format: { type: 'json_object' } }).output_config).toEqual({ format: { type: 'json_schema', schema: { type: 'object', additionalProperties: true } } });
    expect(build({ messages: user, response_format: { type: 'text' } }).output_config).toBeUndefined();
  });

  it('opens with a user turn when the conversation opens with the assistant', () => {
    const body = build({ messages: [{ role: 'system', content: 's' }, { role: 'assistant', content: 'Hi, how can I help?' }, { role: 'user', content: 'hello' }] });
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(body.messages[0].content).toEqual([{ type: 'text', text: '(conversation start)' }]);
  });

  it('leaves out user ids that look like personal data', () => {
    expect(build({ messages: user, user: 'ann@example.com' }).metadata).toBeUndefined();
    expect(build({ messages: user, user: '+1 415 555 0100' }).metadata).toBeUndefined();
    expect(build({ messages: user, user: 'u-42' }).metadata).toEqual({ user_id: 'u-42' });
  });

  it('sends no credential and names the version', () => {
    const request = chatRequest({ messages: user, stream: true }, { model: 'claude-sonnet-4-6', upstream: upstream() }, true);
    expect(request.headers).toEqual({ 'content-type': 'application/json', 'anthropic-version': '2023-06-01', accept: 'text/event-stream' });
    expect(JSON.parse(request.body).stream).toBe(true);
  });
});
