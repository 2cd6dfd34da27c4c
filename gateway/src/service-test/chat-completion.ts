// service-test's Chat Completions answers: the JSON object and the SSE chunk sequence, shaped as the
// official SDKs' stream helpers require (role first, tool-call ids and types on first delta,
// finish_reason last, an optional usage chunk with empty choices, then [DONE]).
import { randomId } from './random-ids.ts';
import type { SseStream } from '../http/sse.ts';
import { answerConversation } from './answer.ts';
import type { ChatOptions, ChatRequest } from './chat-request.ts';
import type { ToolCall } from './conversation.ts';
import { countTokens, decodeTokens, encodeTokens, truncateToTokens } from './tokens.ts';
import { countPromptTokens } from './usage.ts';

type FinishReason = 'stop' | 'length' | 'tool_calls';

interface Choice {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  completionTokens: number;
  /** The stop sequence the answer was cut at, when that is why it stopped. */
  stopSequence: string | null;
}

const SYSTEM_FINGERPRINT = 'fp_service_test';

export function completionId(): string {
  return randomId('chatcmpl-', 15);
}

/** Applies stop sequences, then max_tokens, to the engine's answer. */
function toChoice(request: ChatRequest): Choice {
  const answer = answerConversation(request.conversation);
  if (answer.kind === 'tool_calls') {
    const completionTokens = answer.calls.reduce((sum, c) => sum + countTokens(c.name) + countTokens(c.arguments), 0);
    return { content: null, toolCalls: answer.calls, finishReason: 'tool_calls', completionTokens, stopSequence: null };
  }
  let text = answer.text;
  // Each cut leaves a shorter text: the last sequence found is the one that occurs first.
  let stopSequence: string | null = null;
  for (const stop of request.options.stop) {
    const at = text.indexOf(stop);
    if (at !== -1) {
      text = text.slice(0, at);
      stopSequence = stop;
    }
  }
  if (request.options.maxTokens !== undefined) {
    const cut = truncateToTokens(text, request.options.maxTokens);
    if (cut.truncated) return { content: cut.text, toolCalls: [], finishReason: 'length', completionTokens: cut.tokens, stopSequence: null };
    return { content: cut.text, toolCalls: [], finishReason: 'stop', completionTokens: cut.tokens, stopSequence };
  }
  return { content: text, toolCalls: [], finishReason: 'stop', completionTokens: countTokens(text), stopSequence };
}

function usageOf(promptTokens: number, completionTokens: number) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

/** Every token with log probability 0: service-test is certain of what it says. */
function logprobsOf(text: string | null, options: ChatOptions) {
  if (!options.logprobs || text === null) return null;
  const entries: Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: unknown[] }> = [];
  const tokens = encodeTokens(text);
  let consumed = 0;
  for (let i = 0; i < tokens.length; i++) {
    // Decode cumulatively so multi-byte characters split across tokens stay intact.
    const prefix = decodeTokens(tokens.slice(0, i + 1));
    const token = prefix.slice(consumed);
    consumed = prefix.length;
    const bytes = [...Buffer.from(token)];
    const entry = { token, logprob: 0, bytes };
    entries.push({ ...entry, top_logprobs: options.topLogprobs > 0 ? [entry] : [] });
  }
  return { content: entries, refusal: null };
}

/** `onStopSequence` learns the stop sequence the answer was cut at, if that is why it stopped: OpenAI's answer has no place for it. */
export function chatCompletion(request: ChatRequest, model: string, onStopSequence: (sequence: string) => void = () => {}) {
  const choice = toChoice(request);
  if (choice.stopSequence !== null) onStopSequence(choice.stopSequence);
  const promptTokens = countPromptTokens(request.conversation);
  const choices = Array.from({ length: request.options.n }, (_, index) => ({
    index,
    message: {
      role: 'assistant' as const,
      content: choice.content,
      refusal: null,
      annotations: [],
      ...(choice.toolCalls.length > 0 ? { tool_calls: choice.toolCalls.map(wireToolCall) } : {}),
    },
    logprobs: logprobsOf(choice.content, request.options),
    finish_reason: choice.finishReason,
  }));
  return {
    id: completionId(),
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    choices,
    usage: usageOf(promptTokens, choice.completionTokens * request.options.n),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

function wireToolCall(call: ToolCall) {
  return { id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } };
}

/** Splits text into word-sized fragments, keeping every character (spaces stay with their word). */
export function fragments(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** `reportUsage` learns the usage before the first chunk: the answer is decided before it is streamed. */
export async function streamChatCompletion(
  sse: SseStream,
  request: ChatRequest,
  model: string,
  reportUsage: (usage: { inputTokens: number; outputTokens: number }) => void = () => {},
  /** Told each choice's finish reason once its last chunk has been sent (telemetry), and the stop sequence it was cut at, if any. */
  reportFinish: (index: number, reason: string, stopSequence: string | null) => void = () => {},
): Promise<void> {
  const choice = toChoice(request);
  const promptTokens = countPromptTokens(request.conversation);
  reportUsage({ inputTokens: promptTokens, outputTokens: choice.completionTokens * request.options.n });
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  const { includeUsage } = request.options;
  const chunk = (index: number, delta: Record<string, unknown>, finishReason: FinishReason | null, logprobs: unknown = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    service_tier: 'default',
    choices: [{ index, delta, logprobs, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });

  for (let index = 0; index < request.options.n && sse.open; index++) {
    await sse.send(chunk(index, { role: 'assistant', content: choice.content === null ? null : '', refusal: null }, null));
    if (choice.content !== null) {
      for (const piece of fragments(choice.content)) {
        if (!sse.open) return;
        await sse.send(chunk(index, { content: piece }, null, logprobsOf(piece, request.options)));
      }
    }
    for (const [callIndex, call] of choice.toolCalls.entries()) {
      await sse.send(chunk(index, { tool_calls: [{ index: callIndex, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null));
      for (const piece of call.arguments.match(/[\s\S]{1,16}/g) ?? []) {
        if (!sse.open) return;
        await sse.send(chunk(index, { tool_calls: [{ index: callIndex, function: { arguments: piece } }] }, null));
      }
    }
    await sse.send(chunk(index, {}, choice.finishReason));
    reportFinish(index, choice.finishReason, choice.stopSequence);
  }
  if (includeUsage && sse.open) {
    await sse.send({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: SYSTEM_FINGERPRINT, service_tier: 'default', choices: [], usage: usageOf(promptTokens, choice.completionTokens * request.options.n) });
  }
  await sse.send('[DONE]');
  sse.end();
}
