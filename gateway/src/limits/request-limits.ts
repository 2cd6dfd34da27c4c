// The limits of one request, from admission to settlement, as two store calls:
//   admit()   before it runs: concurrency slots, one request in each per-minute window and, for a
//             token-priced request, its tokens in each token window and monthly budget, all or
//             nothing (one round trip to a shared store);
//   finish()  on every ending (answer, error, client disconnect): releases the slots and settles the
//             reservation to the usage actually reported, refunding what was not used. It does not
//             wait for the store, so the settlement leaves in the same write as the other end work.
//
// The store may be asynchronous, so the request can end while admit() still waits for it: finish()
// then leaves the settlement to admit(), which gives back what it took at once and throws, so nothing
// stays held for a request that is gone. A request that ends before it was admitted at all (refused
// while its body was read) is still counted in the per-minute request windows, where they have room.
import { admissionOf, checksNothing, type AdmissionPlan } from './admission-plan.ts';
import type { TokenEstimate } from './estimate.ts';
import { rateLimitHeaders, type WindowReport } from './headers.ts';
import type { Admitted, LimitStore, Settlement, WindowState } from './limit-store.ts';
import { monthOf } from './month.ts';
import type { SpendAsk } from './limit-store.ts';
import { refusalError, requestGone } from './refusals.ts';

/** Usage as the exchange reports it. */
export interface SettledUsage {
  inputTokens: number;
  outputTokens: number;
}

interface Ending {
  status: number;
  answered: boolean;
  usage: SettledUsage | null;
  /** What the request cost (micros); null when it is not priced. */
  cost: number | null;
}

const NOTHING_CHECKED: Admitted = Object.freeze({ admitted: true, held: Object.freeze({ id: '' }), requests: [], windows: [], amount: 0, cap: null, spend: 0 });

export class RequestLimits {
  readonly #plan: AdmissionPlan;
  readonly #store: LimitStore;
  readonly #clock: () => number;
  #state: 'waiting' | 'admitting' | 'admitted' | 'refused' = 'waiting';
  #admitted: Admitted | null = null;
  /** The month the reservation was charged to; settlement goes there even across a roll-over. */
  #period = '';
  #ending: Ending | null = null;
  #requests: WindowReport | null = null;
  #tokens: WindowReport | null = null;

  readonly #currency: string;

  constructor(plan: AdmissionPlan, store: LimitStore, clock: () => number, currency = 'USD') {
    this.#plan = plan;
    this.#store = store;
    this.#clock = clock;
    this.#currency = currency;
  }

  /** True when a spend budget applies, i.e. when working out the request's worst cost is worth it. */
  get pricesSpend(): boolean {
    return this.#plan.spendBounds.length > 0;
  }

  /** Micros the admission reserved in the spend budgets (0: none). */
  get spendReserved(): number {
    return this.#admitted?.spend ?? 0;
  }

  /** True when a token limit applies, i.e. when estimating the request's tokens is worth it. */
  get pricesTokens(): boolean {
    return this.#plan.pricesTokens;
  }

  /**
   * Admits the request, reserving `estimate`'s tokens when given, or throws 429 (wait), 400 (it can
   * never fit) or 503 (the shared store cannot answer and a limit fails closed); on a throw nothing
   * stays held. Returns the output limit per answer the request must be held to when a monthly
   * budget's last tokens are all it may use and it set no limit of its own; null otherwise.
   * A request is admitted once; a second call (nothing left to take) returns null.
   */
  async admit(estimate: TokenEstimate | null, spend: SpendAsk | null = null): Promise<number | null> {
    if (this.#state !== 'waiting') return null;
    if (this.#ending) throw requestGone();
    this.#state = 'admitting';
    const now = this.#clock();
    this.#period = monthOf(now);
    const admission = admissionOf(this.#plan, estimate, this.#period, spend);
    let outcome;
    try {
      outcome = checksNothing(admission) ? NOTHING_CHECKED : await this.#store.admit(admission, now);
    } catch (error) {
      this.#state = 'refused';
      throw error;
    }
    if (!outcome.admitted) {
      this.#state = 'refused';
      const { refusal } = outcome;
      if (refusal.limit === 'requests') this.#requests = report(this.#plan.requests[refusal.index].limits.requestsPerMinute!, refusal);
      if (refusal.limit === 'tokens') this.#tokens = report(this.#plan.tokens[refusal.index].limits.tokensPerMinute!, refusal);
      throw refusalError(refusal, this.#plan, estimate, now, this.headers(), this.#currency);
    }
    this.#state = 'admitted';
    this.#admitted = outcome;
    outcome.requests.forEach((state, i) => (this.#requests = tighter(this.#requests, report(this.#plan.requests[i].limits.requestsPerMinute!, state))));
    outcome.windows.forEach((state, i) => (this.#tokens = tighter(this.#tokens, report(this.#plan.tokens[i].limits.tokensPerMinute!, state))));
    // The request ended while the store answered: give back at once what was just taken.
    if (this.#ending) {
      this.#settle(this.#ending);
      throw requestGone();
    }
    return outcome.cap;
  }

  /** OpenAI's x-ratelimit-* headers for the limits that apply. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.#requests) rateLimitHeaders('requests', this.#requests, headers);
    if (this.#tokens) rateLimitHeaders('tokens', this.#tokens, headers);
    return headers;
  }

  /** Releases and settles; safe to call more than once (only the first call counts). */
  finish(status: number, answered: boolean, usage: SettledUsage | null, cost: number | null = null): void {
    if (this.#ending) return;
    this.#ending = { status, answered, usage, cost };
    // An admission under way settles when the store answers; a refused one took nothing.
    if (this.#state === 'waiting' || this.#state === 'admitted') this.#settle(this.#ending);
  }

  #settle({ status, answered, usage, cost }: Ending): void {
    const plan = this.#plan;
    const admitted = this.#admitted;
    const reserved = admitted?.amount ?? 0;
    // Without reported usage: an error answer cost nothing; an answer that went out (a stream cut
    // short, a disconnect) may have been billed upstream, so the reservation stands.
    const actual = usage ? usage.inputTokens + usage.outputTokens : answered && status < 400 ? reserved : 0;
    const windows: Settlement['windows'] = [];
    plan.tokenBounds.forEach(({ key }, i) => {
      const ref = admitted?.windows[i]?.ref ?? -1;
      if (reserved > 0 ? ref >= 0 && actual !== reserved : actual > 0) windows.push({ key, ref });
    });
    const settlement: Settlement = {
      account: plan.account,
      held: admitted ? admitted.held : null,
      slots: admitted ? plan.slotBounds.map((bound) => bound.key) : [],
      windows,
      budgets: reserved > 0 || actual > 0 ? plan.budgetBounds.map((bound) => bound.key) : [],
      period: this.#period || monthOf(this.#clock()),
      reserved,
      actual,
      uncounted: admitted ? [] : plan.requestBounds,
    };
    const spendReserved = admitted?.spend ?? 0;
    const spendActual = cost ?? 0;
    if (spendReserved > 0 || spendActual > 0) {
      settlement.spendBudgets = plan.spendBounds.map((bound) => bound.key);
      settlement.spendReserved = spendReserved;
      settlement.spendActual = spendActual;
    }
    if (settlement.slots.length + windows.length + settlement.budgets.length + (settlement.spendBudgets?.length ?? 0) + settlement.uncounted.length === 0) return;
    // Stores never reject a settlement for an outage (they keep and retry it) and report their own
    // failures, so nothing waits on it: it goes out in the same write as the request's other end work.
    const pending = this.#store.settle(settlement, this.#clock());
    if (pending) pending.catch(() => {});
  }
}

function report(limit: number, state: Pick<WindowState, 'used' | 'resetMs'>): WindowReport {
  return { limit, remaining: limit - state.used, resetMs: state.resetMs };
}

/** The report with less room left is the one a client must respect. */
function tighter(current: WindowReport | null, next: WindowReport): WindowReport {
  if (!current) return next;
  return next.remaining < current.remaining || (next.remaining === current.remaining && next.resetMs > current.resetMs) ? next : current;
}
