// OpenAI's `reasoning_effort`, as every translated provider reads it: the values the openai SDK's
// `ReasoningEffort` type and OpenAI's OpenAPI spec accept, and one 400 for anything else, so that a
// value no provider knows is refused the same way whichever provider serves the model.
import { ApiError } from '../http/errors.ts';

/** Every reasoning_effort OpenAI accepts (openai SDK `ReasoningEffort`), from none to most. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];
/** An effort that asks for reasoning. */
export type ThinkingEffort = Exclude<ReasoningEffort, 'none'>;

const KNOWN = new Set<unknown>(REASONING_EFFORTS);

/** The request's reasoning_effort: null when absent, the effort when OpenAI accepts it, else a 400 naming it. */
export function reasoningEffort(value: unknown): ReasoningEffort | null {
  if (value == null) return null;
  if (!KNOWN.has(value)) {
    const list = REASONING_EFFORTS.map((effort) => `'${effort}'`).join(', ');
    throw new ApiError(400, 'invalid_value', `reasoning_effort must be one of ${list}.`, { param: 'reasoning_effort' });
  }
  return value as ReasoningEffort;
}
