// OpenAI's reasoning_effort as Claude's extended thinking, the same whether Claude is reached through
// Anthropic's Messages API or Amazon Bedrock's Converse: one budget per effort, kept to at most three
// quarters of the request's max_tokens so the answer after the thinking keeps room, and never below
// Anthropic's minimum budget. The table is documented in docs/providers/anthropic.md and
// docs/providers/bedrock.md; keep the three together. The Messages API dialect reads it backwards
// (a client's budget_tokens as an effort), as docs/clients.md says.
import type { ThinkingEffort } from './reasoning-effort.ts';

/** Anthropic's smallest thinking budget: a max_tokens at or below it leaves no room to think. */
export const MIN_THINKING_BUDGET = 1024;

/** The extended-thinking budget each effort asks for, before the request's max_tokens limits it. */
export const THINKING_BUDGET: Record<ThinkingEffort, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  // As much as the output maximum allows: the three-quarter cap decides.
  max: 65536,
};

/** reasoning_effort as `output_config.effort`, for the Claude models that think adaptively. */
export const ADAPTIVE_EFFORT: Record<ThinkingEffort, string> = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
};

/** What a client is told when its max_tokens leaves Claude no room to think. */
export const NO_ROOM_TO_THINK = `Thinking on Claude models needs max_completion_tokens above ${MIN_THINKING_BUDGET}.`;

/** The most of max_tokens thinking may take: three quarters, so that an answer follows it. */
function thinkingShare(maxTokens: number): number {
  return Math.floor((maxTokens * 3) / 4);
}

/**
 * The thinking budget for an effort within a request's max_tokens: the effort's budget, at most three
 * quarters of max_tokens, at least Anthropic's minimum. Null when max_tokens is too small to think
 * at all (Anthropic wants budget_tokens >= 1024 and below max_tokens).
 */
export function thinkingBudget(effort: ThinkingEffort, maxTokens: number): number | null {
  if (maxTokens <= MIN_THINKING_BUDGET) return null;
  return Math.max(MIN_THINKING_BUDGET, Math.min(THINKING_BUDGET[effort], thinkingShare(maxTokens)));
}

/** Output room beside the thinking budget when the client set no max_tokens and the request must name one. */
const ANSWER_ROOM = 4096;

/**
 * A max_tokens for a thinking request the client gave none for, where sending the model's whole
 * output maximum is not wanted (Bedrock reserves max_tokens against the account's quota): room for
 * the effort's full budget under the three-quarter cap plus an answer, within the model's maximum.
 */
export function maxTokensForThinking(effort: ThinkingEffort, outputMaximum: number): number {
  const budget = THINKING_BUDGET[effort];
  return Math.min(outputMaximum, Math.max(budget + ANSWER_ROOM, Math.ceil((budget * 4) / 3)));
}
