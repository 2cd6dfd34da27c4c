// A limit store whose every call answers later, like a shared store over the network: each call waits
// for the next turn of the event loop, or, while held, until the test releases it. Tests use it to
// end a request while its limits are still being checked and see that nothing stays held.
import { MemoryLimitStore, type BudgetGrant, type LimitStore, type WindowGrant } from '../../gateway/src/limits/limit-store.ts';
import type { SlotRef } from '../../gateway/src/limits/sliding-window.ts';

export class DelayedLimitStore implements LimitStore {
  readonly inner: MemoryLimitStore;
  /** Names of the calls waiting now (while held), in order. */
  readonly waiting: string[] = [];
  /** Calls started and not yet answered. */
  inFlight = 0;
  #held: ReadonlySet<string> | null = null;
  #release: Array<() => void> = [];

  constructor(inner = new MemoryLimitStore()) {
    this.inner = inner;
  }

  /** From now on calls of these names wait until letGo(). */
  hold(...names: string[]): void {
    this.#held = new Set(names);
  }

  /** Lets every waiting call (and every later one) go on. */
  letGo(): void {
    this.#held = null;
    this.waiting.length = 0;
    for (const go of this.#release.splice(0)) go();
  }

  async #later<T>(name: string, call: () => T): Promise<T> {
    this.inFlight++;
    try {
      if (this.#held?.has(name)) {
        this.waiting.push(name);
        await new Promise<void>((resolve) => this.#release.push(resolve));
      } else {
        await new Promise((resolve) => setImmediate(resolve));
      }
      return call();
    } finally {
      this.inFlight--;
    }
  }

  tryAdd(key: string, amount: number, limit: number, now: number): Promise<WindowGrant> {
    return this.#later('tryAdd', () => this.inner.tryAdd(key, amount, limit, now));
  }
  adjust(key: string, ref: SlotRef, delta: number, now: number): Promise<void> {
    return this.#later('adjust', () => this.inner.adjust(key, ref, delta, now));
  }
  record(key: string, amount: number, now: number): Promise<void> {
    return this.#later('record', () => this.inner.record(key, amount, now));
  }
  peek(key: string, now: number): Promise<{ used: number; resetMs: number }> {
    return this.#later('peek', () => this.inner.peek(key, now));
  }
  acquire(key: string, max: number): Promise<{ granted: boolean; open: number }> {
    return this.#later('acquire', () => this.inner.acquire(key, max));
  }
  release(key: string): Promise<void> {
    return this.#later('release', () => this.inner.release(key));
  }
  reserveBudget(key: string, period: string, amount: number, limit: number): Promise<BudgetGrant> {
    return this.#later('reserveBudget', () => this.inner.reserveBudget(key, period, amount, limit));
  }
  settleBudget(key: string, period: string, reserved: number, actual: number): Promise<void> {
    return this.#later('settleBudget', () => this.inner.settleBudget(key, period, reserved, actual));
  }
  budgetUsed(key: string, period: string): Promise<number> {
    return this.#later('budgetUsed', () => this.inner.budgetUsed(key, period));
  }
}
