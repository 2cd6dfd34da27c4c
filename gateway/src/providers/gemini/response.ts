// A whole GenerateContent answer as OpenAI's `chat.completion`: one choice a candidate, text joined
// in order, thought summaries as `reasoning_content`, function calls as tool calls, and a blocked
// prompt (no candidates) as one empty choice finished by `content_filter`.
import type { AnswerContext, OpenAIUsage } from '../provider.ts';
import { answerId, finishReason, openAIUsage, toolCall, ToolCallNamer, type GeminiCandidate, type GeminiResponse } from './answer.ts';

export function chatResponse(json: unknown, ctx: AnswerContext): Record<string, unknown> & { usage?: OpenAIUsage } {
  const answer = (json ?? {}) as GeminiResponse;
  const id = answerId(answer.responseId, ctx.requestId);
  const namer = new ToolCallNamer(id);
  const candidates = Array.isArray(answer.candidates) ? answer.candidates : [];
  const choices =
    candidates.length > 0
      ? candidates.map((candidate, i) => choice(candidate, candidate.index ?? i, namer))
      : [{ index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: answer.promptFeedback?.blockReason ? 'content_filter' : 'stop' }];
  // Gemini always reports usage; an answer without it is not said to have cost nothing (the gateway then keeps its estimate).
  const usage = answer.usageMetadata ? { usage: openAIUsage(answer.usageMetadata) } : {};
  return { id: `chatcmpl-${id}`, object: 'chat.completion', created: ctx.created, model: ctx.publicModel, choices, ...usage, system_fingerprint: null };
}

function choice(candidate: GeminiCandidate, index: number, namer: ToolCallNamer) {
  let content = '';
  let reasoning = '';
  const toolCalls: ReturnType<typeof toolCall>[] = [];
  for (const part of candidate.content?.parts ?? []) {
    if (part.functionCall) toolCalls.push(toolCall(part, namer));
    else if (typeof part.text === 'string') {
      if (part.thought) reasoning += part.text;
      else content += part.text;
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: content || (toolCalls.length > 0 ? null : content), refusal: null };
  if (reasoning) message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls.map(({ index: _index, ...call }) => call);
  return { index, message, logprobs: null, finish_reason: finishReason(candidate.finishReason ?? 'STOP', toolCalls.length > 0) };
}
