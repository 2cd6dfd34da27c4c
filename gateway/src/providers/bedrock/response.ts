// Converse answer → OpenAI `chat.completion`. Bedrock answers carry no id and no model: the id comes
// from the `x-amzn-requestid` header, the model is the one the client asked for.
import { ApiError } from '../../http/errors.ts';
import type { StopSequenceHit } from '../../exchange/exchange.ts';
import type { AnswerContext, OpenAIUsage } from '../provider.ts';
import { clientToolName } from './tool-names.ts';

export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** Converse's stopReason in OpenAI's words; any tool call makes the turn `tool_calls` unless it was cut or filtered. */
export function finishReason(stopReason: unknown, sawToolCall: boolean): string {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    case 'tool_use':
      return 'tool_calls';
    default:
      return sawToolCall ? 'tool_calls' : 'stop';
  }
}

/**
 * Converse's `stop_sequence` stop reason, with the sequence Claude names in
 * `additionalModelResponseFields.stop_sequence` (the request asks for it: request.ts); other models
 * do not say which.
 */
export function stopSequenceHit(stopReason: unknown, fields: unknown): StopSequenceHit | null {
  if (stopReason !== 'stop_sequence') return null;
  const sequence = (fields as { stop_sequence?: unknown } | null | undefined)?.stop_sequence;
  return { sequence: typeof sequence === 'string' && sequence !== '' ? sequence : null };
}

export function chatStopSequence(json: unknown): StopSequenceHit | null {
  const answer = json as { stopReason?: unknown; additionalModelResponseFields?: unknown } | null;
  return stopSequenceHit(answer?.stopReason, answer?.additionalModelResponseFields);
}

/** Bedrock's inputTokens leave out cache reads and writes; OpenAI's prompt_tokens count them. */
export function openAIUsage(usage: ConverseUsage | undefined): OpenAIUsage {
  const cacheRead = usage?.cacheReadInputTokens ?? 0;
  const cacheWrite = usage?.cacheWriteInputTokens ?? 0;
  const prompt = (usage?.inputTokens ?? 0) + cacheRead + cacheWrite;
  const completion = usage?.outputTokens ?? 0;
  const details: OpenAIUsage['prompt_tokens_details'] = { cached_tokens: cacheRead };
  if (cacheWrite > 0) details.cache_write_tokens = cacheWrite;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: details };
}

export function completionId(ctx: AnswerContext): string {
  const header = ctx.responseHeaders['x-amzn-requestid'];
  const requestId = (Array.isArray(header) ? header[0] : header) || ctx.requestId;
  return `chatcmpl-${requestId}`;
}

interface ContentBlock {
  text?: string;
  toolUse?: { toolUseId: string; name: string; input?: unknown };
  reasoningContent?: { reasoningText?: { text?: string } };
}

export function chatResponse(json: unknown, ctx: AnswerContext): Record<string, unknown> & { usage?: OpenAIUsage } {
  const answer = json as { output?: { message?: { content?: ContentBlock[] } }; stopReason?: string; usage?: ConverseUsage } | null;
  const content = answer?.output?.message?.content;
  if (!Array.isArray(content)) {
    throw new ApiError(502, 'upstream_invalid_response', 'Amazon Bedrock answered without an output message.', { type: 'server_error' });
  }
  let text = '';
  let reasoning = '';
  const toolCalls: Array<Record<string, unknown>> = [];
  for (const block of content) {
    if (typeof block.text === 'string') text += block.text;
    else if (block.toolUse) {
      toolCalls.push({
        id: block.toolUse.toolUseId,
        type: 'function',
        function: { name: clientToolName(block.toolUse.name), arguments: JSON.stringify(block.toolUse.input ?? {}) },
      });
    } else if (typeof block.reasoningContent?.reasoningText?.text === 'string') reasoning += block.reasoningContent.reasoningText.text;
  }
  const message: Record<string, unknown> = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const usage = openAIUsage(answer?.usage);
  return {
    id: completionId(ctx),
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.publicModel,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(answer?.stopReason, toolCalls.length > 0) }],
    usage,
  };
}
