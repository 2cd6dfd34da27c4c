// A circuit breaker per upstream: after `threshold` consecutive failures it opens for `cooldownMs`,
// then lets one probe request through (half-open); a success closes it, a failure re-opens it.
export interface BreakerOptions {
  threshold: number;
  cooldownMs: number;
}

interface State {
  failures: number;
  openUntil: number;
  probing: boolean;
}

export class Breakers {
  #states = new Map<string, State>();
  #options: BreakerOptions;
  #now: () => number;

  constructor(options: BreakerOptions = { threshold: 5, cooldownMs: 30_000 }, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  #state(name: string): State {
    let state = this.#states.get(name);
    if (!state) {
      state = { failures: 0, openUntil: 0, probing: false };
      this.#states.set(name, state);
    }
    return state;
  }

  /** Whether a request may go to this upstream now; claims the single probe slot when half-open. */
  tryAcquire(name: string): boolean {
    const state = this.#state(name);
    if (state.failures < this.#options.threshold) return true;
    if (this.#now() < state.openUntil || state.probing) return false;
    state.probing = true;
    return true;
  }

  /** Milliseconds until the next upstream of `names` may be probed; for Retry-After. */
  retryAfterMs(names: string[]): number {
    const now = this.#now();
    const waits = names.map((n) => Math.max(0, this.#state(n).openUntil - now));
    return waits.length ? Math.min(...waits) : 0;
  }

  success(name: string): void {
    this.#states.set(name, { failures: 0, openUntil: 0, probing: false });
  }

  failure(name: string): void {
    const state = this.#state(name);
    state.failures += 1;
    state.probing = false;
    if (state.failures >= this.#options.threshold) state.openUntil = this.#now() + this.#options.cooldownMs;
  }

  /** The state as a dashboard names it; asks without creating an entry for an upstream never tried. */
  stateOf(name: string): 'closed' | 'open' | 'half_open' {
    const state = this.#states.get(name);
    if (!state || state.failures < this.#options.threshold) return 'closed';
    return this.#now() < state.openUntil ? 'open' : 'half_open';
  }

  /** Releases a probe slot without a verdict (the client went away, say). */
  release(name: string): void {
    this.#state(name).probing = false;
  }
}
