// The in-process limit store (single-process mode): sliding windows, open-request counts and monthly
// budgets in this process's memory, answered synchronously. It checks in the same order and refuses
// with the same answers as the shared store's admission script (redis-scripts.ts).
import type { Admission, AdmissionOutcome, Refusal, Settlement, WindowState } from './limit-store.ts';
import { SlidingWindow } from './sliding-window.ts';
import { fitTokens, spendOf, tooLarge } from './token-fit.ts';

/** Settled budget usage by period and scope id, as persisted (budget-file.ts). */
export type BudgetUsage = Record<string, Record<string, number>>;

const NO_HOLD = Object.freeze({ id: '' });

export class MemoryLimitStore {
  #windows = new Map<string, SlidingWindow>();
  #open = new Map<string, number>();
  #budgetUsed: BudgetUsage;
  #budgetReserved = new Map<string, number>();
  #onBudgetChange: () => void;

  constructor(budgetUsage: BudgetUsage = {}, onBudgetChange: () => void = () => {}) {
    this.#budgetUsed = budgetUsage;
    this.#onBudgetChange = onBudgetChange;
  }

  admit(admission: Admission, now: number): AdmissionOutcome {
    const undo: Array<() => void> = [];
    const refuse = (refusal: Refusal): AdmissionOutcome => {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]();
      return { admitted: false, refusal };
    };
    for (let index = 0; index < admission.slots.length; index++) {
      const { key, limit } = admission.slots[index];
      const open = this.#open.get(key) ?? 0;
      if (open >= limit) return refuse({ limit: 'concurrency', index, open });
      this.#open.set(key, open + 1);
      undo.push(() => this.#release(key));
    }
    const requests: WindowState[] = [];
    for (let index = 0; index < admission.requests.length; index++) {
      const { key, limit } = admission.requests[index];
      const window = this.#window(key);
      const waitMs = window.waitFor(1, limit, now);
      if (waitMs > 0) return refuse({ limit: 'requests', index, used: window.used(now), waitMs, resetMs: window.resetIn(now) });
      const ref = window.add(1, now);
      undo.push(() => window.adjust(ref, -1, now));
      requests.push({ ref, used: window.used(now), resetMs: window.resetIn(now) });
    }
    const { tokens, tokenWindows, budgets, period } = admission;
    const spend = admission.spend ?? null;
    const spendBudgets = spend ? (admission.spendBudgets ?? []) : [];
    const spendUsed = spend ? spendBudgets.map(({ key }) => this.budgetUsed(key, period)) : [];
    if (!tokens && !spend) return { admitted: true, held: NO_HOLD, requests, windows: tokenWindows.map(({ key }) => this.#peek(key, now)), amount: 0, cap: null, spend: 0 };

    let amount = 0;
    let cap: number | null = null;
    let windows: WindowState[] = [];
    if (!tokens) windows = tokenWindows.map(({ key }) => this.#peek(key, now));
    else {
      const used = budgets.map(({ key }) => this.budgetUsed(key, period));
      ({ amount, cap } = fitTokens(tokens, budgets, used, spend && { ask: spend, budgets: spendBudgets, used: spendUsed }));
      const refusal = tooLarge(amount, tokenWindows, budgets);
      if (refusal) return refuse(refusal);
      for (let index = 0; index < tokenWindows.length; index++) {
        const { key, limit } = tokenWindows[index];
        const window = this.#window(key);
        const waitMs = window.waitFor(amount, limit, now);
        if (waitMs > 0) return refuse({ limit: 'tokens', index, used: window.used(now), waitMs, resetMs: window.resetIn(now), amount });
        const ref = window.add(amount, now);
        undo.push(() => window.adjust(ref, -amount, now));
        windows.push({ ref, used: window.used(now), resetMs: window.resetIn(now) });
      }
      for (let index = 0; index < budgets.length; index++) {
        // A zero reservation (an endpoint priced only afterwards) still needs some budget left.
        const fits = amount > 0 ? used[index] + amount <= budgets[index].limit : used[index] < budgets[index].limit;
        if (!fits) return refuse({ limit: 'monthly', index, used: used[index], amount });
      }
    }
    const spent = spend ? spendOf(spend, tokens ? amount - tokens.input : 0) : 0;
    for (let index = 0; index < spendBudgets.length && spend; index++) {
      const fits = spent > 0 ? spendUsed[index] + spent <= spendBudgets[index].limit : spendUsed[index] < spendBudgets[index].limit;
      if (!fits) return refuse({ limit: 'spend', index, used: spendUsed[index], amount: spent });
    }
    if (tokens) for (const { key } of budgets) this.#reserve(key, period, amount);
    if (spend) for (const { key } of spendBudgets) this.#reserve(key, period, spent);
    return { admitted: true, held: NO_HOLD, requests, windows, amount, cap, spend: spent };
  }

  settle(settlement: Settlement, now: number): void {
    const { reserved, actual, period } = settlement;
    for (const key of settlement.slots) this.#release(key);
    for (const { key, ref } of settlement.windows) {
      if (reserved > 0) {
        if (ref >= 0 && actual !== reserved) this.#adjust(key, ref, actual - reserved, now);
      } else if (actual > 0) this.#window(key).add(actual, now);
    }
    for (const key of settlement.budgets) this.#settleBudget(key, period, reserved, actual);
    for (const key of settlement.spendBudgets ?? []) this.#settleBudget(key, period, settlement.spendReserved ?? 0, settlement.spendActual ?? 0);
    // A request that ended before admission still counts, where the window has room.
    for (const { key, limit } of settlement.uncounted) {
      const window = this.#window(key);
      if (window.waitFor(1, limit, now) === 0) window.add(1, now);
    }
  }

  /** Settled usage plus open reservations (tests, and the budget file's view). */
  budgetUsed(key: string, period: string): number {
    return (this.#budgetUsed[period]?.[key] ?? 0) + (this.#budgetReserved.get(`${period}\u0000${key}`) ?? 0);
  }

  /** The settled usage, for persistence. Periods other than `keep` are dropped first. */
  budgetSnapshot(keep: readonly string[]): BudgetUsage {
    for (const period of Object.keys(this.#budgetUsed)) if (!keep.includes(period)) delete this.#budgetUsed[period];
    return this.#budgetUsed;
  }

  #peek(key: string, now: number): WindowState {
    const window = this.#windows.get(key);
    if (!window) return { ref: -1, used: 0, resetMs: 0 };
    const used = window.used(now);
    // Idle windows are dropped so memory follows active accounts, not all accounts ever seen.
    if (window.empty) this.#windows.delete(key);
    return { ref: -1, used, resetMs: window.resetIn(now) };
  }

  #adjust(key: string, ref: number, delta: number, now: number): void {
    const window = this.#windows.get(key);
    if (!window) return;
    window.adjust(ref, delta, now);
    if (window.used(now) === 0) this.#windows.delete(key);
  }

  #release(key: string): void {
    const open = (this.#open.get(key) ?? 0) - 1;
    if (open > 0) this.#open.set(key, open);
    else this.#open.delete(key);
  }

  #reserve(key: string, period: string, amount: number): void {
    if (amount <= 0) return;
    const reservedKey = `${period}\u0000${key}`;
    this.#budgetReserved.set(reservedKey, (this.#budgetReserved.get(reservedKey) ?? 0) + amount);
  }

  #settleBudget(key: string, period: string, reserved: number, actual: number): void {
    const reservedKey = `${period}\u0000${key}`;
    const left = (this.#budgetReserved.get(reservedKey) ?? 0) - reserved;
    if (left > 0) this.#budgetReserved.set(reservedKey, left);
    else this.#budgetReserved.delete(reservedKey);
    if (actual <= 0) return;
    const usage = (this.#budgetUsed[period] ??= {});
    usage[key] = (usage[key] ?? 0) + actual;
    this.#onBudgetChange();
  }

  #window(key: string): SlidingWindow {
    let window = this.#windows.get(key);
    if (!window) this.#windows.set(key, (window = new SlidingWindow()));
    return window;
  }
}
