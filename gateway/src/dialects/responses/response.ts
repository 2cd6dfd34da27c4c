// A chat completion (whole, or rebuilt from its stream) as a Response object: output items (reasoning,
// an assistant message, function calls and custom tool calls), status and incomplete details from the finish reason,
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
  /**
   * The reasoning summary the client asked for (`reasoning.summary`), or null. A chat backend's
   * reasoning text is the nearest thing to a summary it has: asked for one, the client gets the text
   * as the reasoning item's summary; otherwise as its reasoning_text content.
   */
  summary: string | null;
  /** The client's `custom` (freeform) tools, sent to the backend as functions of one string `input`. */
  customTools: ReadonlySet<string>;
}

export function newResponseBase(model: string, settings: ResponseSettings, reasoning: Json | undefined, customTools: ReadonlySet<string> = new Set()): ResponseBase {
  const effort = reasoning?.effort;
  const summary = reasoning?.summary ?? reasoning?.generate_summary;
  return { id: randomHexId('resp_', 24), createdAt: Math.floor(Date.now() / 1000), model, settings, effort: typeof effort === 'string' ? effort : null, summary: typeof summary === 'string' ? summary : null, customTools };
}

export const itemId = (prefix: string) => randomHexId(prefix, 24);

/**
 * Chat usage in Responses' words. Both count cache reads and writes inside the input; the providers
 * report writes, which Chat Completions has no field for, as prompt_tokens_details.cache_write_tokens.
 */
export function responseUsage(usage: Json | null | undefined): Json | null {
  if (!usage) return null;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens ?? 0;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached, cache_write_tokens: written }, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: usage.total_tokens ?? input + output };
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
    reasoning: { effort: base.effort, summary: base.summary },
    usage: inProgress ? null : usage,
  };
}

export function reasoningItem(text: string, asSummary: boolean, status = 'completed', id = itemId('rs_')): Json {
  if (asSummary) return { type: 'reasoning', id, summary: [{ type: 'summary_text', text }], status };
  return { type: 'reasoning', id, summary: [], content: [{ type: 'reasoning_text', text }], status };
}

export function messageItem(text: string, status: string, id = itemId('msg_')): Json {
  return { type: 'message', id, status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
}

export function functionCallItem(callId: string, name: string, args: string, status = 'completed', id = itemId('fc_')): Json {
  return { type: 'function_call', id, call_id: callId, name, arguments: args, status };
}

export function customToolCallItem(callId: string, name: string, input: string, id = itemId('ctc_')): Json {
  return { type: 'custom_tool_call', id, call_id: callId, name, input };
}

/**
 * The freeform input of a custom tool's call, from the arguments of the function it was sent as.
 * Arguments that are not the expected `{"input": string}` are given as they came: never lost.
 */
export function customInputOf(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as Json).input === 'string') return (parsed as Json).input;
  } catch {
    // Not JSON: the model wrote the input itself.
  }
  return args;
}

/** A chat tool call as its Responses item: a custom tool's call, or a function call. */
export function toolCallItem(base: ResponseBase, callId: string, name: string, args: string, id?: string): Json {
  return base.customTools.has(name) ? customToolCallItem(callId, name, customInputOf(args), id) : functionCallItem(callId, name, args, 'completed', id);
}

/** A whole chat completion as a Response object. */
export function responseOfCompletion(base: ResponseBase, completion: Json): Json {
  const choice = completion.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const output: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning) output.push(reasoningItem(reasoning, base.summary !== null));
  const text = typeof message.content === 'string' ? message.content : '';
  const itemStatus = statusOf(choice.finish_reason).status;
  if (text || !message.tool_calls?.length) output.push(messageItem(text, itemStatus));
  for (const call of message.tool_calls ?? []) output.push(toolCallItem(base, String(call.id), String(call.function?.name), String(call.function?.arguments ?? '')));
  return responseObject(base, output, choice.finish_reason, responseUsage(completion.usage));
}

/** The assistant turn a continuation replays, in chat's words. */
export function assistantMessageOf(response: Json): Json {
  let content = '';
  const calls: Json[] = [];
  for (const item of response.output as Json[]) {
    if (item.type === 'message') content += item.content.map((part: Json) => part.text).join('');
    if (item.type === 'function_call') calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
    if (item.type === 'custom_tool_call') calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: JSON.stringify({ input: item.input }) } });
  }
  return { role: 'assistant', content: content || null, ...(calls.length ? { tool_calls: calls } : {}) };
}
