// How much a token reservation takes, once the monthly budgets' room is known, and whether it could
// ever fit. The in-process store and the failure policy compute it here; the shared store's admission
// script does the same inside Redis (redis-scripts.ts), where the room is read atomically with the
// reservation it decides.
import type { Bound, Refusal, TokenAsk } from './limit-store.ts';

export interface FittedTokens {
  amount: number;
  cap: number | null;
}

/**
 * A default output shrinks to the room each budget has left after the input (`used[i]`: settled plus
 * reserved in budget i), and the answer is then capped to it, per choice. The default is a guess, not
 * the client's demand: waiting on a budget means weeks, a shorter answer is better.
 */
export function fitTokens(tokens: TokenAsk, budgets: readonly Bound[], used: readonly number[]): FittedTokens {
  if (!tokens.fit) return { amount: tokens.input + tokens.output, cap: null };
  let output = tokens.output;
  let capped = false;
  budgets.forEach((budget, i) => {
    const room = budget.limit - used[i] - tokens.input;
    if (room < output) [output, capped] = [room, true];
  });
  output = Math.max(tokens.minOutput, 1, output);
  if (!capped) return { amount: tokens.input + output, cap: null };
  const cap = Math.max(tokens.minOutput, Math.floor(output / tokens.choices));
  return { amount: tokens.input + cap * tokens.choices, cap };
}

/** The reservation is larger than a limit on its own: it can never be admitted (a 400, not a 429). */
export function tooLarge(amount: number, windows: readonly Bound[], budgets: readonly Bound[]): Refusal | null {
  for (let i = 0; i < windows.length; i++) if (amount > windows[i].limit) return { limit: 'too-large', budget: false, index: i, amount };
  for (let i = 0; i < budgets.length; i++) if (amount > budgets[i].limit) return { limit: 'too-large', budget: true, index: i, amount };
  return null;
}
