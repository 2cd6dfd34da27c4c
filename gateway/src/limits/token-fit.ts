// How much a reservation takes, once the monthly budgets' room is known, and whether it could ever
// fit. The in-process store and the failure policy compute it here; the shared store's admission
// script does the same inside Redis (redis-scripts.ts), where the room is read atomically with the
// reservation it decides. Tokens and money are fitted together: a default output shrinks to what
// every token budget leaves and to what every spend budget still pays for.
import type { Bound, Refusal, TokenAsk } from './limit-store.ts';
import { MICROS, tokensCost } from './money.ts';
import type { SpendAsk } from './limit-store.ts';

export interface FittedTokens {
  amount: number;
  cap: number | null;
}

/** The room of the spend budgets (micros: limit − settled − reserved, per budget), for fitting an output. */
export interface SpendRoom {
  ask: SpendAsk;
  budgets: readonly Bound[];
  used: readonly number[];
}

/**
 * A default output shrinks to the room each budget has left after the input (`used[i]`: settled plus
 * reserved in budget i), and the answer is then capped to it, per choice. The default is a guess, not
 * the client's demand: waiting on a budget means weeks, a shorter answer is better.
 */
export function fitTokens(tokens: TokenAsk, budgets: readonly Bound[], used: readonly number[], spend: SpendRoom | null = null): FittedTokens {
  if (!tokens.fit) return { amount: tokens.input + tokens.output, cap: null };
  let output = tokens.output;
  let capped = false;
  budgets.forEach((budget, i) => {
    const room = budget.limit - used[i] - tokens.input;
    if (room < output) [output, capped] = [room, true];
  });
  if (spend && spend.ask.outputPerMillion > 0 && spend.budgets.length > 0) {
    // Held to its reservation even with room to spare: an answer longer than the output reserved
    // for it could take a spend budget past its limit, and money budgets are never run past.
    capped = true;
    spend.budgets.forEach((budget, i) => {
      const affordable = affordableOutput(budget.limit - spend.used[i] - spend.ask.fixed, spend.ask.outputPerMillion, output);
      if (affordable < output) [output, capped] = [affordable, true];
    });
  }
  output = Math.max(tokens.minOutput, 1, output);
  if (!capped) return { amount: tokens.input + output, cap: null };
  const cap = Math.max(tokens.minOutput, Math.floor(output / tokens.choices));
  return { amount: tokens.input + cap * tokens.choices, cap };
}

/**
 * The most output tokens `room` micros pay for at `price` micros per million, up to `wanted`. The
 * first guess is a double's division; the steps after it make it exact (tokensCost is exact).
 */
export function affordableOutput(room: number, price: number, wanted: number): number {
  if (room <= 0) return 0;
  if (tokensCost(wanted, price) <= room) return wanted;
  let out = Math.min(wanted, Math.floor((room / price) * MICROS));
  while (out > 0 && tokensCost(out, price) > room) out--;
  while (out + 1 < wanted && tokensCost(out + 1, price) <= room) out++;
  return out;
}

/** What the request costs at most (micros) once its output is `outputTokens`. */
export function spendOf(ask: SpendAsk, outputTokens: number): number {
  return Math.max(ask.floor, ask.fixed + tokensCost(outputTokens, ask.outputPerMillion));
}

/** The reservation is larger than a limit on its own: it can never be admitted (a 400, not a 429). */
export function tooLarge(amount: number, windows: readonly Bound[], budgets: readonly Bound[]): Refusal | null {
  for (let i = 0; i < windows.length; i++) if (amount > windows[i].limit) return { limit: 'too-large', budget: false, index: i, amount };
  for (let i = 0; i < budgets.length; i++) if (amount > budgets[i].limit) return { limit: 'too-large', budget: true, index: i, amount };
  return null;
}
