// Where limit state lives, as two calls per request: admit() takes everything a request needs before it
// runs (concurrency slots, one request in each per-minute window, its tokens in each token window and
// monthly budget) all at once or nothing; settle() gives back and corrects all of it when the request
// ends. A shared store (Redis) answers each with one atomic script, so admission is one round trip
// and a limit holds across every replica at once; the in-process store answers synchronously.
import type { SlotRef } from './sliding-window.ts';

type Awaitable<T> = T | Promise<T>;

export interface LimitStore {
  admit(admission: Admission, now: number): Awaitable<AdmissionOutcome>;
  /** Never throws for a store outage: a shared store keeps what it cannot write and retries it. */
  settle(settlement: Settlement, now: number): Awaitable<void>;
}

/** A limited amount: the store key of its counter and its limit. */
export interface Bound {
  key: string;
  limit: number;
}

export interface Admission {
  /** The account the scopes belong to: a shared store keeps all its keys together (one cluster slot). */
  account: string;
  /** Concurrency slot sets (limit: open requests at most). */
  slots: Bound[];
  /** Per-minute request windows, each to count one request in. */
  requests: Bound[];
  /** Per-minute token windows: the reservation goes in each, or (without tokens) each is only reported. */
  tokenWindows: Bound[];
  /** Monthly budgets (scope ids), reserved in `period` (with tokens only). */
  budgets: Bound[];
  period: string;
  /** The tokens to reserve; null when the request reserves none (only its headers report the windows). */
  tokens: TokenAsk | null;
  /** Monthly spend budgets (scope ids), in micros of the currency, reserved in `period` (with a spend ask only). */
  spendBudgets?: Bound[];
  /**
   * The most the request may cost; null when it costs nothing (an unpriced model, service-test). Its
   * output tokens are those the token ask ends with (fitted to every budget's room, money's included).
   */
  spend?: SpendAsk | null;
}

export interface TokenAsk {
  input: number;
  /** Output to reserve, already within what every token window leaves after the input. */
  output: number;
  /**
   * The output is the gateway's default, not the client's: it shrinks to the room each monthly budget
   * has left (never below `minOutput`, nor 1), and the answer is then capped to it, per choice.
   */
  fit: boolean;
  minOutput: number;
  choices: number;
}

export interface WindowState {
  /** Where the amount was recorded, for settlement (-1: nothing recorded). */
  ref: SlotRef;
  used: number;
  resetMs: number;
}

export type AdmissionOutcome = Admitted | { admitted: false; refusal: Refusal };

export interface Admitted {
  admitted: true;
  /** What the store holds for this request, handed back at settlement. */
  held: Held;
  /** One per request window, in order. */
  requests: WindowState[];
  /** One per token window, in order: the reservation's, or a report when no tokens were asked. */
  windows: WindowState[];
  /** Tokens reserved (input + output after fitting); 0 without tokens. */
  amount: number;
  /** When the output was fitted to a budget: the output limit per answer the request is held to. */
  cap: number | null;
  /** Micros reserved in each spend budget (the request's worst cost); 0 without a spend ask. */
  spend: number;
}

/** A store's handle on what an admission took; `id` is empty when nothing was taken in the store. */
export interface Held {
  id: string;
}

/** `index` is the position in the admission's list of that kind. */
export type Refusal =
  | { limit: 'concurrency'; index: number; open: number }
  | { limit: 'requests'; index: number; used: number; waitMs: number; resetMs: number }
  | { limit: 'tokens'; index: number; used: number; waitMs: number; resetMs: number; amount: number }
  | { limit: 'monthly'; index: number; used: number; amount: number }
  /** Spend budget i cannot pay the request's worst cost (micros), even with its output fitted. */
  | { limit: 'spend'; index: number; used: number; amount: number }
  /** The reservation alone is larger than a token window's (`budget` false) or a budget's limit. */
  | { limit: 'too-large'; budget: boolean; index: number; amount: number };

export interface Settlement {
  account: string;
  /** The admission's handle; null when the request ended before it was admitted. */
  held: Held | null;
  /** Slot sets to release. */
  slots: string[];
  /** Token windows, with the reservation's ref in each (-1: none recorded). */
  windows: Array<{ key: string; ref: SlotRef }>;
  /** Budgets (scope ids) to settle the reservation in, or to charge without one. */
  budgets: string[];
  period: string;
  /** Tokens reserved at admission (0: none, the usage is charged as it comes). */
  reserved: number;
  /** Tokens actually used. */
  actual: number;
  /** Request windows to count a request in that ended before admission, where they have room. */
  uncounted: Bound[];
  /** Spend budgets (scope ids) to settle the spend reservation in, or to charge without one. */
  spendBudgets?: string[];
  /** Micros reserved at admission, and what the request did cost. */
  spendReserved?: number;
  spendActual?: number;
}

/** What a request may cost, worked out when it is admitted. */
export interface SpendAsk {
  /** The most it costs apart from its output tokens (input tokens; or images, characters, audio). */
  fixed: number;
  /** Micros per million output tokens: its output is priced (and fitted to a budget) at this. */
  outputPerMillion: number;
  /** The least it costs (the model's perRequest). */
  floor: number;
}
