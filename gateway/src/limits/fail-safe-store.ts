// What a limit means while the shared store cannot answer. Per-minute limits and concurrency exist to
// protect upstreams from bursts, and refusing every request because Redis blinked would turn a store
// outage into a gateway outage: they fail open by default (the request is admitted and counted
// nowhere). Monthly budgets are money: they fail closed by default (a 503 that says why, which the
// SDKs retry). Both are switchable (TOLLGATE_REDIS_RATE_LIMITS / TOLLGATE_REDIS_BUDGETS). Settlement
// never fails a request: the Redis store keeps what it cannot write and retries it.
import { ApiError } from '../http/errors.ts';
import type { Logger } from 'pino';
import { retryHeaders } from './headers.ts';
import type { AdmissionBatch, AdmissionOutcome, BatchLimitStore, ReservationBatch, ReservationOutcome } from './batch.ts';
import type { BudgetGrant, WindowGrant } from './limit-store.ts';
import type { SlotRef } from './sliding-window.ts';

export type FailureMode = 'open' | 'closed';

export interface FailurePolicy {
  rateLimits: FailureMode;
  budgets: FailureMode;
}

export const DEFAULT_FAILURE_POLICY: Readonly<FailurePolicy> = Object.freeze({ rateLimits: 'open', budgets: 'closed' });

/** Answers given while failing open: admitted, nothing recorded (a negative ref settles nothing). */
const OPEN_WINDOW: WindowGrant = Object.freeze({ granted: true, ref: -1, used: 0, waitMs: 0, resetMs: 0 });
const STORE_RETRY_MS = 1000;

export class FailSafeLimitStore implements BatchLimitStore {
  readonly #inner: BatchLimitStore & { holdWithoutStore?(keys: readonly string[]): void };
  readonly #policy: FailurePolicy;
  readonly #log: Logger;
  /** Calls answered by the failure policy instead of the store, for a metric. */
  fallbacks = 0;

  constructor(inner: BatchLimitStore & { holdWithoutStore?(keys: readonly string[]): void }, policy: FailurePolicy, log: Logger) {
    this.#inner = inner;
    this.#policy = policy;
    this.#log = log;
  }

  async admitBatch(batch: AdmissionBatch, now: number): Promise<AdmissionOutcome> {
    try {
      return await this.#inner.admitBatch(batch, now);
    } catch (error) {
      // Admitted and counted nowhere: refs of -1 settle nothing, and the slots' release drops nothing.
      const open = this.#rate<AdmissionOutcome>(error, { admitted: true, requests: batch.requests.map(() => ({ ref: -1, used: 0, resetMs: 0 })), peeks: batch.peeks.map(() => ({ used: 0, resetMs: 0 })) });
      this.#inner.holdWithoutStore?.(batch.slots.map((slot) => slot.key));
      return open;
    }
  }

  async reserveBatch(batch: ReservationBatch, now: number): Promise<ReservationOutcome> {
    try {
      return await this.#inner.reserveBatch(batch, now);
    } catch (error) {
      const open: ReservationOutcome = { granted: true, windows: batch.windows.map(() => ({ ref: -1, used: 0, resetMs: 0 })) };
      // Budgets decide when there are any (the stricter question); otherwise only windows were asked.
      return batch.budgets.length > 0 ? this.#budget(error, open) : this.#rate(error, open);
    }
  }

  async tryAdd(key: string, amount: number, limit: number, now: number): Promise<WindowGrant> {
    try {
      return await this.#inner.tryAdd(key, amount, limit, now);
    } catch (error) {
      return this.#rate(error, OPEN_WINDOW);
    }
  }

  async adjust(key: string, ref: SlotRef, delta: number, now: number): Promise<void> {
    try {
      await this.#inner.adjust(key, ref, delta, now);
    } catch (error) {
      this.#ignored(error); // a lost correction of a per-minute window heals itself within the minute
    }
  }

  async record(key: string, amount: number, now: number): Promise<void> {
    try {
      await this.#inner.record(key, amount, now);
    } catch (error) {
      this.#ignored(error);
    }
  }

  async peek(key: string, now: number): Promise<{ used: number; resetMs: number }> {
    try {
      return await this.#inner.peek(key, now);
    } catch (error) {
      // Only feeds the x-ratelimit headers: never worth refusing a request over.
      this.#ignored(error);
      return { used: 0, resetMs: 0 };
    }
  }

  async acquire(key: string, max: number): Promise<{ granted: boolean; open: number }> {
    try {
      return await this.#inner.acquire(key, max);
    } catch (error) {
      const open = this.#rate(error, { granted: true, open: 0 });
      this.#inner.holdWithoutStore?.([key]);
      return open;
    }
  }

  async release(key: string): Promise<void> {
    try {
      await this.#inner.release(key);
    } catch (error) {
      this.#ignored(error); // the lease expires on its own
    }
  }

  async reserveBudget(key: string, period: string, amount: number, limit: number): Promise<BudgetGrant> {
    try {
      return await this.#inner.reserveBudget(key, period, amount, limit);
    } catch (error) {
      return this.#budget(error, { granted: true, used: 0 });
    }
  }

  settleBudget(key: string, period: string, reserved: number, actual: number): Promise<void> | void {
    return this.#inner.settleBudget(key, period, reserved, actual);
  }

  async budgetUsed(key: string, period: string): Promise<number> {
    try {
      return await this.#inner.budgetUsed(key, period);
    } catch (error) {
      return this.#budget(error, 0);
    }
  }

  #rate<T>(error: unknown, open: T): T {
    return this.#fallback(error, this.#policy.rateLimits, 'rate limits', open);
  }

  #budget<T>(error: unknown, open: T): T {
    return this.#fallback(error, this.#policy.budgets, 'monthly budgets', open);
  }

  #fallback<T>(error: unknown, mode: FailureMode, what: string, open: T): T {
    this.fallbacks++;
    this.#report(error);
    if (mode === 'closed') {
      throw new ApiError(503, 'limits_unavailable', `The gateway cannot check ${what} right now (its shared store is unreachable), so the request was not started. Retry shortly.`, {
        headers: retryHeaders(STORE_RETRY_MS),
      });
    }
    return open;
  }

  #ignored(error: unknown): void {
    this.fallbacks++;
    this.#report(error);
  }

  #report(error: unknown): void {
    // An outage is logged once, by the client, when it begins; anything else (a script error) is a bug.
    if ((error as Error)?.name === 'RedisUnavailableError') this.#log.debug({ err: error }, 'shared store unavailable: limit answered by the failure policy');
    else this.#log.error({ err: error }, 'shared limit store failed unexpectedly; answered by the failure policy');
  }
}
