// Sign-in attempts per client address: a fixed one-minute window, bounded in memory (the oldest
// addresses are forgotten first when too many are tracked).
const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 10_000;

export class SignInAttempts {
  readonly #perMinute: number;
  readonly #clock: () => number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(perMinute: number, clock: () => number) {
    this.#perMinute = perMinute;
    this.#clock = clock;
  }

  /** Counts an attempt; false when the address has used up its minute (the caller answers 429). */
  allow(address: string): boolean {
    const now = this.#clock();
    let window = this.#windows.get(address);
    if (!window || now - window.start >= WINDOW_MS) {
      this.#windows.delete(address);
      if (this.#windows.size >= MAX_ADDRESSES) this.#windows.delete(this.#windows.keys().next().value!);
      this.#windows.set(address, (window = { start: now, count: 0 }));
    }
    window.count += 1;
    return window.count <= this.#perMinute;
  }

  /** Seconds until the address may try again. */
  retryAfter(address: string): number {
    const window = this.#windows.get(address);
    return window ? Math.max(1, Math.ceil((window.start + WINDOW_MS - this.#clock()) / 1000)) : 1;
  }
}
