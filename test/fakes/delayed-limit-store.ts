// A limit store whose every call answers later, like a shared store over the network: each call waits
// for the next turn of the event loop, or, while held, until the test releases it. Tests use it to
// end a request while its limits are still being checked and see that nothing stays held.
import type { Admission, AdmissionOutcome, LimitStore, Settlement } from '../../gateway/src/limits/limit-store.ts';
import { MemoryLimitStore } from '../../gateway/src/limits/memory-limit-store.ts';

export class DelayedLimitStore implements LimitStore {
  readonly inner: MemoryLimitStore;
  /** Names of the calls waiting now (while held), in order. */
  readonly waiting: string[] = [];
  /** Calls started and not yet answered. */
  inFlight = 0;
  /** Every call, in order (admit, settle). */
  readonly calls: string[] = [];
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
    this.calls.push(name);
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

  admit(admission: Admission, now: number): Promise<AdmissionOutcome> {
    return this.#later('admit', () => this.inner.admit(admission, now));
  }
  settle(settlement: Settlement, now: number): Promise<void> {
    return this.#later('settle', () => this.inner.settle(settlement, now));
  }
}
