// An Anthropic Message as OpenAI's chat.completion: text blocks concatenated in order, tool_use
// blocks as tool_calls, thinking as `reasoning_content` (with the signed blocks in `thinking_blocks`
// so a client can send them back on its next turn), the finish reason decided from what came back,
// and usage in OpenAI's meaning (cache reads and writes inside prompt_tokens).
import type { StopSequenceHit } from '../../exchange/exchange.ts';
import type { AnswerContext, OpenAIUsage } from '../provider.ts';
import { ApiError } from '../../http/errors.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/** Anthropic's usage fields, as message_start, message_delta and the whole Message report them. */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/**
 * Anthropic's three input counts are disjoint; OpenAI's prompt_tokens holds them all, with the
 * cache reads as cached_tokens. Output tokens already include thinking. Cache writes, which OpenAI
 * has no field for, are prompt_tokens_details.cache_write_tokens when there are any (the name the
 * Bedrock translation uses too, so Claude's usage reads the same from either provider).
 */
export function openAIUsage(usage: AnthropicUsage): OpenAIUsage {
  const read = count(usage.cache_read_input_tokens);
  const written = count(usage.cache_creation_input_tokens);
  const prompt = count(usage.input_tokens) + read + written;
  const completion = count(usage.output_tokens);
  const details: OpenAIUsage['prompt_tokens_details'] = { cached_tokens: read };
  if (written > 0) details.cache_write_tokens = written;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: details,
    completion_tokens_details: { reasoning_tokens: count(usage.output_tokens_details?.thinking_tokens) },
  };
}

/** A turn that called tools is `tool_calls`, whatever stop reason came with it. */
export function finishReason(stopReason: unknown, calledTools: boolean): string {
  if (calledTools) return 'tool_calls';
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn (a server tool paused; there is nothing to resume in OpenAI's API)
      return 'stop';
  }
}

export function completionId(messageId: unknown, ctx: AnswerContext): string {
  return `chatcmpl-${typeof messageId === 'string' && messageId !== '' ? messageId : ctx.requestId}`;
}

/** Anthropic's `stop_sequence` stop reason and the sequence it names: what OpenAI's `stop` cannot tell. */
export function stopSequenceHit(stopReason: unknown, sequence: unknown): StopSequenceHit | null {
  if (stopReason !== 'stop_sequence') return null;
  return { sequence: typeof sequence === 'string' && sequence !== '' ? sequence : null };
}

export function chatStopSequence(json: unknown): StopSequenceHit | null {
  const answer = json as { stop_reason?: unknown; stop_sequence?: unknown } | null;
  return stopSequenceHit(answer?.stop_reason, answer?.stop_sequence);
}

export function chatResponse(json: unknown, ctx: AnswerContext): Json & { usage?: OpenAIUsage } {
  if (!isObject(json) || !Array.isArray(json.content)) {
    throw new ApiError(502, 'upstream_invalid_response', 'Anthropic answered 200 with a body that is not a message.');
  }
  let text = '';
  let reasoning = '';
  const thinkingBlocks: Json[] = [];
  const toolCalls: Json[] = [];
  for (const block of json.content) {
    if (!isObject(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking') {
      if (typeof block.thinking === 'string') reasoning += block.thinking;
      thinkingBlocks.push({ type: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' });
    } else if (block.type === 'redacted_thinking') thinkingBlocks.push({ type: 'redacted_thinking', data: block.data ?? '' });
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(isObject(block.input) ? block.input : {}) } });
    }
  }
  const finish = finishReason(json.stop_reason, toolCalls.length > 0);
  const message: Json = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning !== '' || thinkingBlocks.length > 0) message.reasoning_content = reasoning;
  if (thinkingBlocks.length > 0) message.thinking_blocks = thinkingBlocks;
  const usage = openAIUsage(isObject(json.usage) ? (json.usage as AnthropicUsage) : {});
  return {
    id: completionId(json.id, ctx),
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.publicModel,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    usage,
  };
}
