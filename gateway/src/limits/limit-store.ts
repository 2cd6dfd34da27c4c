// Where limit state lives. The limiter only talks to this interface and awaits every call, so a
// shared store (Redis with one Lua script per operation) can replace the in-process one and make
// limits exact across replicas; until then each replica enforces its share (see replica-share.ts).
import { SlidingWindow, type SlotRef } from './sliding-window.ts';

type Awaitable<T> = T | Promise<T>;

export interface WindowGrant {
  granted: boolean;
  /** Where the amount was recorded (meaningful when granted), for settlement. */
  ref: SlotRef;
  /** Amount in the window after this call. */
  used: number;
  /** When refused: milliseconds until the amount would fit. */
  waitMs: number;
  /** Milliseconds until the window is empty again. */
  resetMs: number;
}

export interface BudgetGrant {
  granted: boolean;
  /** Settled usage plus open reservations, after this call. */
  used: number;
}

export interface LimitStore {
  /** Records `amount` in window `key` if the window stays within `limit`. */
  tryAdd(key: string, amount: number, limit: number, now: number): Awaitable<WindowGrant>;
  /** Settles an earlier amount: a positive delta charges more, a negative one refunds. */
  adjust(key: string, ref: SlotRef, delta: number, now: number): Awaitable<void>;
  /** Records usage that had no reservation (always accepted: it already happened). */
  record(key: string, amount: number, now: number): Awaitable<void>;
  peek(key: string, now: number): Awaitable<{ used: number; resetMs: number }>;

  /** Takes one of `max` concurrency slots. */
  acquire(key: string, max: number): Awaitable<{ granted: boolean; open: number }>;
  release(key: string): Awaitable<void>;

  /** Reserves `amount` of a period's budget (a month); refused when it would pass `limit`. */
  reserveBudget(key: string, period: string, amount: number, limit: number): Awaitable<BudgetGrant>;
  /** Turns a reservation into actual usage. */
  settleBudget(key: string, period: string, reserved: number, actual: number): Awaitable<void>;
  /** Settled usage plus open reservations. */
  budgetUsed(key: string, period: string): Awaitable<number>;
}

/** Settled budget usage by period and key, as persisted. */
export type BudgetUsage = Record<string, Record<string, number>>;

export class MemoryLimitStore implements LimitStore {
  #windows = new Map<string, SlidingWindow>();
  #open = new Map<string, number>();
  #budgetUsed: BudgetUsage;
  #budgetReserved = new Map<string, number>();
  #onBudgetChange: () => void;

  constructor(budgetUsage: BudgetUsage = {}, onBudgetChange: () => void = () => {}) {
    this.#budgetUsed = budgetUsage;
    this.#onBudgetChange = onBudgetChange;
  }

  tryAdd(key: string, amount: number, limit: number, now: number): WindowGrant {
    const window = this.#window(key);
    const waitMs = window.waitFor(amount, limit, now);
    const ref = waitMs === 0 ? window.add(amount, now) : -1;
    return { granted: waitMs === 0, ref, used: window.used(now), waitMs, resetMs: window.resetIn(now) };
  }

  adjust(key: string, ref: SlotRef, delta: number, now: number): void {
    const window = this.#windows.get(key);
    if (!window) return;
    window.adjust(ref, delta, now);
    if (window.used(now) === 0) this.#windows.delete(key);
  }

  record(key: string, amount: number, now: number): void {
    if (amount > 0) this.#window(key).add(amount, now);
  }

  peek(key: string, now: number): { used: number; resetMs: number } {
    const window = this.#windows.get(key);
    if (!window) return { used: 0, resetMs: 0 };
    const used = window.used(now);
    // Idle windows are dropped so memory follows active accounts, not all accounts ever seen.
    if (window.empty) this.#windows.delete(key);
    return { used, resetMs: window.resetIn(now) };
  }

  acquire(key: string, max: number): { granted: boolean; open: number } {
    const open = this.#open.get(key) ?? 0;
    if (open >= max) return { granted: false, open };
    this.#open.set(key, open + 1);
    return { granted: true, open: open + 1 };
  }

  release(key: string): void {
    const open = (this.#open.get(key) ?? 0) - 1;
    if (open > 0) this.#open.set(key, open);
    else this.#open.delete(key);
  }

  reserveBudget(key: string, period: string, amount: number, limit: number): BudgetGrant {
    const reservedKey = `${period}\u0000${key}`;
    const reserved = this.#budgetReserved.get(reservedKey) ?? 0;
    const used = this.budgetUsed(key, period);
    // A zero reservation (an endpoint priced only afterwards) still needs some budget left.
    const granted = amount > 0 ? used + amount <= limit : used < limit;
    if (granted && amount > 0) this.#budgetReserved.set(reservedKey, reserved + amount);
    return { granted, used: granted ? used + amount : used };
  }

  settleBudget(key: string, period: string, reserved: number, actual: number): void {
    const reservedKey = `${period}\u0000${key}`;
    const left = (this.#budgetReserved.get(reservedKey) ?? 0) - reserved;
    if (left > 0) this.#budgetReserved.set(reservedKey, left);
    else this.#budgetReserved.delete(reservedKey);
    if (actual <= 0) return;
    const usage = (this.#budgetUsed[period] ??= {});
    usage[key] = (usage[key] ?? 0) + actual;
    this.#onBudgetChange();
  }

  budgetUsed(key: string, period: string): number {
    return (this.#budgetUsed[period]?.[key] ?? 0) + (this.#budgetReserved.get(`${period}\u0000${key}`) ?? 0);
  }

  /** The settled usage, for persistence. Periods other than `keep` are dropped first. */
  budgetSnapshot(keep: readonly string[]): BudgetUsage {
    for (const period of Object.keys(this.#budgetUsed)) if (!keep.includes(period)) delete this.#budgetUsed[period];
    return this.#budgetUsed;
  }

  #window(key: string): SlidingWindow {
    let window = this.#windows.get(key);
    if (!window) this.#windows.set(key, (window = new SlidingWindow()));
    return window;
  }
}
