// An OpenAI chat completion turned into the Messages API's answer: content in Anthropic's order
// (thinking, text, tool_use), the stop reason decided from what came back (a turn with tool calls is
// `tool_use` whatever the finish reason said), usage in Anthropic's meaning (input excludes cache reads
// and writes, which are reported apart).
import type { StopSequenceHit } from '../../exchange/exchange.ts';
import { toAnthropicToolId } from './tool-ids.ts';

type Json = Record<string, unknown>;

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** OpenAI's prompt_tokens count cache reads and writes (the writes, which OpenAI has no field for, as the providers report them in prompt_tokens_details.cache_write_tokens); Anthropic's input_tokens count neither. */
export function anthropicUsage(usage: unknown): AnthropicUsage {
  const u = (usage ?? {}) as { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } };
  const read = u.prompt_tokens_details?.cached_tokens ?? 0;
  const written = u.prompt_tokens_details?.cache_write_tokens ?? 0;
  return { input_tokens: Math.max(0, (u.prompt_tokens ?? 0) - read - written), output_tokens: u.completion_tokens ?? 0, cache_creation_input_tokens: written, cache_read_input_tokens: read };
}

export function stopReason(finishReason: unknown, sawToolCall: boolean): string {
  if (sawToolCall) return 'tool_use';
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content_filter') return 'refusal';
  return 'end_turn';
}

/**
 * The request's stop sequences, and whether the backend stopped on one: chat's finish_reason `stop`
 * does not say, so a backend that knows tells the exchange (exchange.stopSequence), never the OpenAI
 * answer, and the Messages API reads it from there.
 */
export interface StopSequences {
  requested: readonly string[];
  hit(): StopSequenceHit | null;
}

export const NO_STOP_SEQUENCES: StopSequences = { requested: [], hit: () => null };

/**
 * The Messages API's stop_reason and stop_sequence: `stop_sequence` when the backend said it stopped
 * on one, naming it when the backend did (or when the request had only one); `end_turn` otherwise,
 * for every backend that does not say (Gemini, OpenAI-compatible upstreams).
 */
export function stopOf(finishReason: unknown, sawToolCall: boolean, stops: StopSequences): { stop_reason: string; stop_sequence: string | null } {
  const reason = stopReason(finishReason, sawToolCall);
  const hit = reason === 'end_turn' ? stops.hit() : null;
  if (!hit) return { stop_reason: reason, stop_sequence: null };
  return { stop_reason: 'stop_sequence', stop_sequence: hit.sequence ?? (stops.requested.length === 1 ? stops.requested[0]! : null) };
}

/** Anthropic's ids are `msg_…`; the gateway's request id keeps the answer traceable. */
export function messageId(requestId: string): string {
  return `msg_${requestId.replace(/[^A-Za-z0-9]/g, '')}`;
}

export function chatToMessage(completion: Json, model: string, requestId: string, stops: StopSequences = NO_STOP_SEQUENCES): Json {
  const choice = ((completion.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message ?? {}) as Json;
  const content: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message.content === 'string' && message.content) content.push({ type: 'text', text: message.content });
  else if (typeof message.refusal === 'string' && message.refusal) content.push({ type: 'text', text: message.refusal });
  const calls = (message.tool_calls as Json[] | undefined) ?? [];
  for (const call of calls) {
    const fn = (call.function ?? {}) as Json;
    content.push({ type: 'tool_use', id: toAnthropicToolId(String(call.id)), name: String(fn.name), input: parseArguments(fn.arguments) });
  }
  return {
    id: messageId(requestId),
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopOf(choice.finish_reason, calls.length > 0, stops),
    usage: anthropicUsage(completion.usage),
  };
}

/** Tool input must be an object for Anthropic's clients; arguments a model got wrong are kept readable. */
export function parseArguments(text: unknown): Json {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    const parsed = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : { value: parsed };
  } catch {
    return { _raw_arguments: text };
  }
}
