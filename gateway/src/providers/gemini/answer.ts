// What Gemini answers, in OpenAI's terms, for both the whole answer and the stream: finish reasons
// decided from what came back (a turn with a function call is `tool_calls`, whatever Gemini says),
// usage in OpenAI's meaning (thoughts inside completion tokens), tool-call ids unique per answer with
// the thought signature carried inside them.
import type { OpenAIUsage } from '../provider.ts';
import { encodeToolCallId } from './tool-ids.ts';

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
}

export interface GeminiCandidate {
  index?: number;
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
  finishMessage?: string;
}

export interface GeminiUsage {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  cachedContentTokenCount?: number;
  totalTokenCount?: number;
}

export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsage;
  responseId?: string;
  modelVersion?: string;
  error?: unknown;
}

const FILTERED = new Set(['SAFETY', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'RECITATION', 'LANGUAGE']);

/** Gemini's finishReason in OpenAI's words. Reasons with no equivalent (MALFORMED_FUNCTION_CALL, OTHER) are `stop`. */
export function finishReason(reason: string, sawFunctionCall: boolean): string {
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content_filter';
  return sawFunctionCall ? 'tool_calls' : 'stop';
}

export function openAIUsage(usage: GeminiUsage): OpenAIUsage {
  const prompt = (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0);
  const thoughts = usage.thoughtsTokenCount ?? 0;
  const completion = (usage.candidatesTokenCount ?? 0) + thoughts;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage.cachedContentTokenCount ?? 0 },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
}

/** Numbers the tool calls of one answer: ids unique within it (and across answers, by the answer's id). */
export class ToolCallNamer {
  private count = 0;
  private readonly answerId: string;
  constructor(answerId: string) {
    this.answerId = answerId;
  }
  /** The OpenAI id of a call: Gemini's own id when it gave one, else `call_<answer>_<n>`, with the signature inside. */
  next(call: GeminiPart): { index: number; id: string } {
    const index = this.count++;
    const own = call.functionCall?.id;
    const id = own ? own : `call_${this.answerId}_${index}`;
    return { index, id: encodeToolCallId(id, call.thoughtSignature) };
  }
}

export function toolCall(part: GeminiPart, namer: ToolCallNamer): { index: number; id: string; type: 'function'; function: { name: string; arguments: string } } {
  const { index, id } = namer.next(part);
  return { index, id, type: 'function', function: { name: part.functionCall?.name ?? '', arguments: JSON.stringify(part.functionCall?.args ?? {}) } };
}

/** The id of an answer's `chatcmpl-…`: Gemini's responseId, else the gateway's request id. */
export function answerId(responseId: string | undefined, requestId: string): string {
  return responseId && /^[A-Za-z0-9_-]+$/.test(responseId) ? responseId : requestId;
}
