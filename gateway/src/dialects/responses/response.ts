// A chat completion (whole, or rebuilt from its stream) as a Response object: output items (reasoning,
// an assistant message, function calls), status and incomplete details from the finish reason,
// usage in Responses' words, and the request's settings echoed back as OpenAI does.
import { randomHexId } from '../../service-test/random-ids.ts';
import type { ResponseSettings } from '../../service-test/responses-request.ts';

type Json = Record<string, any>;

export interface ResponseBase {
  id: string;
  createdAt: number;
  /** The model name the client asked for. */
  model: string;
  settings: ResponseSettings;
  effort: string | null;
}

export function newResponseBase(model: string, settings: ResponseSettings, effort: unknown): ResponseBase {
  return { id: randomHexId('resp_', 24), createdAt: Math.floor(Date.now() / 1000), model, settings, effort: typeof effort === 'string' ? effort : null };
}

export const itemId = (prefix: string) => randomHexId(prefix, 24);

export function responseUsage(usage: Json | null | undefined): Json | null {
  if (!usage) return null;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: usage.total_tokens ?? input + output };
}

/** `incomplete` for a turn cut by the output limit or a content filter, as OpenAI reports it. */
export function statusOf(finishReason: unknown): { status: 'completed' | 'incomplete'; incomplete: Json | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

export function responseObject(base: ResponseBase, output: Json[], finishReason: unknown, usage: Json | null, inProgress = false): Json {
  const { status, incomplete } = statusOf(finishReason);
  return {
    id: base.id,
    object: 'response',
    created_at: base.createdAt,
    status: inProgress ? 'in_progress' : status,
    background: false,
    completed_at: inProgress || status !== 'completed' ? null : Math.floor(Date.now() / 1000),
    error: null,
    incomplete_details: inProgress ? null : incomplete,
    ...base.settings,
    model: base.model,
    output,
    reasoning: { effort: base.effort, summary: null },
    usage: inProgress ? null : usage,
  };
}

export function reasoningItem(text: string, status = 'completed'): Json {
  return { type: 'reasoning', id: itemId('rs_'), summary: [], content: [{ type: 'reasoning_text', text }], status };
}

export function messageItem(text: string, status: string, id = itemId('msg_')): Json {
  return { type: 'message', id, status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
}

export function functionCallItem(callId: string, name: string, args: string, status = 'completed', id = itemId('fc_')): Json {
  return { type: 'function_call', id, call_id: callId, name, arguments: args, status };
}

/** A whole chat completion as a Response object. */
export function responseOfCompletion(base: ResponseBase, completion: Json): Json {
  const choice = completion.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const output: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning) output.push(reasoningItem(reasoning));
  const text = typeof message.content === 'string' ? message.content : '';
  const itemStatus = statusOf(choice.finish_reason).status;
  if (text || !message.tool_calls?.length) output.push(messageItem(text, itemStatus));
  for (const call of message.tool_calls ?? []) output.push(functionCallItem(String(call.id), String(call.function?.name), String(call.function?.arguments ?? '')));
  return responseObject(base, output, choice.finish_reason, responseUsage(completion.usage));
}

/** The assistant turn a continuation replays, in chat's words. */
export function assistantMessageOf(response: Json): Json {
  let content = '';
  const calls: Json[] = [];
  for (const item of response.output as Json[]) {
    if (item.type === 'message') content += item.content.map((part: Json) => part.text).join('');
    if (item.type === 'function_call') calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
  }
  return { role: 'assistant', content: content || null, ...(calls.length ? { tool_calls: calls } : {}) };
}
