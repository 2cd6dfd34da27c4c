// What a limit means while the shared store cannot answer. Per-minute limits and concurrency exist to
// protect upstreams from bursts, and refusing every request because Redis blinked would turn a store
// outage into a gateway outage: they fail open by default (the request is admitted and counted
// nowhere). Monthly budgets are money: they fail closed by default (a 503 that says why, which the
// SDKs retry). Both are switchable (TOLLGATE_REDIS_RATE_LIMITS / TOLLGATE_REDIS_BUDGETS). Settlement
// never fails a request: the Redis store keeps what it cannot write and retries it.
import { ApiError } from '../http/errors.ts';
import type { Logger } from 'pino';
import { retryHeaders } from './headers.ts';
import type { Admission, AdmissionOutcome, LimitStore, Settlement } from './limit-store.ts';
import { fitTokens, tooLarge } from './token-fit.ts';

export type FailureMode = 'open' | 'closed';

export interface FailurePolicy {
  rateLimits: FailureMode;
  budgets: FailureMode;
}

export const DEFAULT_FAILURE_POLICY: Readonly<FailurePolicy> = Object.freeze({ rateLimits: 'open', budgets: 'closed' });

const STORE_RETRY_MS = 1000;
/** Answers given while failing open: nothing recorded (a ref of -1 settles nothing, an empty id holds nothing). */
const NOTHING_RECORDED = Object.freeze({ ref: -1, used: 0, resetMs: 0 });
const NOTHING_HELD = Object.freeze({ id: '' });

export class FailSafeLimitStore implements LimitStore {
  readonly #inner: LimitStore;
  readonly #policy: FailurePolicy;
  readonly #log: Logger;
  /** Admissions answered by the failure policy instead of the store, for a metric. */
  fallbacks = 0;

  constructor(inner: LimitStore, policy: FailurePolicy, log: Logger) {
    this.#inner = inner;
    this.#policy = policy;
    this.#log = log;
  }

  async admit(admission: Admission, now: number): Promise<AdmissionOutcome> {
    try {
      return await this.#inner.admit(admission, now);
    } catch (error) {
      this.fallbacks++;
      this.#report(error);
      // The strictest policy among the limits this admission checks decides.
      const { tokens } = admission;
      const checksBudgets = (tokens !== null && admission.budgets.length > 0) || (!!admission.spend && (admission.spendBudgets?.length ?? 0) > 0);
      const checksRates = admission.slots.length + admission.requests.length + (tokens ? admission.tokenWindows.length : 0) > 0;
      if (checksBudgets && this.#policy.budgets === 'closed') throw unavailable('monthly budgets');
      if (checksRates && this.#policy.rateLimits === 'closed') throw unavailable('rate limits');
      // Admitted and counted nowhere; a request that could never fit is still told so.
      const spend = admission.spend ?? null;
      const spendBudgets = admission.spendBudgets ?? [];
      const fitted = tokens ? fitTokens(tokens, admission.budgets, admission.budgets.map(() => 0), spend && { ask: spend, budgets: spendBudgets, used: spendBudgets.map(() => 0) }) : { amount: 0, cap: null };
      const refusal = tokens ? tooLarge(fitted.amount, admission.tokenWindows, admission.budgets) : null;
      if (refusal) return { admitted: false, refusal };
      return { admitted: true, held: NOTHING_HELD, requests: admission.requests.map(() => NOTHING_RECORDED), windows: admission.tokenWindows.map(() => NOTHING_RECORDED), ...fitted, spend: 0 };
    }
  }

  /** The store keeps and retries what it cannot write; anything else thrown is a bug, logged here. */
  async settle(settlement: Settlement, now: number): Promise<void> {
    try {
      await this.#inner.settle(settlement, now);
    } catch (error) {
      this.#report(error);
    }
  }

  #report(error: unknown): void {
    // An outage is logged once, by the client, when it begins; anything else (a script error) is a bug.
    if ((error as Error)?.name === 'RedisUnavailableError') this.#log.debug({ err: error }, 'shared store unavailable: limit answered by the failure policy');
    else this.#log.error({ err: error }, 'shared limit store failed unexpectedly; answered by the failure policy');
  }
}

function unavailable(what: string): ApiError {
  return new ApiError(503, 'limits_unavailable', `The gateway cannot check ${what} right now (its shared store is unreachable), so the request was not started. Retry shortly.`, {
    headers: retryHeaders(STORE_RETRY_MS),
  });
}
