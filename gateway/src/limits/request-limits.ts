// The limits of one request, from admission to settlement:
//   admit()         concurrency slot, then one request in the per-minute window;
//   reserveTokens() input estimate + output limit in the per-minute token window and the month;
//   finish()        on every ending (answer, error, client disconnect): release the slot and settle
//                   the reservation to the usage actually reported, refunding what was not used.
// Every refusal names the limit that was hit and carries the wait the official SDKs honour.
//
// The store may be asynchronous (a shared one answers over the network), so the request can end
// while admit() or reserveTokens() still waits for it: finish() may run first. Whatever either of
// them takes after that is given back at once, and they throw, so nothing stays held for a request
// that is gone.
import { ApiError } from '../http/errors.ts';
import type { TokenEstimate } from './estimate.ts';
import { rateLimitHeaders, retryHeaders, type WindowReport } from './headers.ts';
import { isBatchStore, type BatchLimitStore } from './batch.ts';
import type { LimitStore } from './limit-store.ts';
import type { LimitScope } from './scopes.ts';
import type { SlotRef } from './sliding-window.ts';

/** Usage as the exchange reports it. */
export interface SettledUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Nothing tells when a concurrent request will end; a second is a polite first retry. */
const CONCURRENCY_RETRY_MS = 1000;

interface TokenHold {
  scope: LimitScope;
  ref: SlotRef | null;
  month: boolean;
}

export class RequestLimits {
  readonly #scopes: LimitScope[];
  readonly #store: LimitStore;
  readonly #clock: () => number;
  #slots: LimitScope[] = [];
  #requests: WindowReport | null = null;
  #tokens: WindowReport | null = null;
  #reserved = 0;
  /** The month the reservation was charged to; settlement goes there even across a roll-over. */
  #period = '';
  #holds: TokenHold[] | null = null;
  #finished = false;

  constructor(scopes: LimitScope[], store: LimitStore, clock: () => number) {
    this.#scopes = scopes;
    this.#store = store;
    this.#clock = clock;
  }

  /** Admits the request or throws a 429; on a throw nothing stays held. */
  async admit(): Promise<void> {
    const now = this.#clock();
    if (isBatchStore(this.#store)) return this.#admitBatch(this.#store, now);
    try {
      for (const scope of this.#scopes) {
        const max = scope.limits.concurrentRequests;
        if (max === undefined) continue;
        const { granted, open } = await this.#store.acquire(scope.keys.open, max);
        if (!granted) {
          throw this.#tooMany(`Too many concurrent requests for ${scope.label}: Limit ${max}, Open ${open}. Retry when one of them has finished.`, CONCURRENCY_RETRY_MS, 'concurrency');
        }
        this.#slots.push(scope);
        if (this.#finished) throw requestGone();
      }
      const counted: Array<{ scope: LimitScope; ref: SlotRef }> = [];
      for (const scope of this.#scopes) {
        const limit = scope.limits.requestsPerMinute;
        if (limit === undefined) continue;
        const grant = await this.#store.tryAdd(scope.keys.rpm, 1, limit, now);
        if (!grant.granted) {
          for (const earlier of counted) await this.#store.adjust(earlier.scope.keys.rpm, earlier.ref, -1, now);
          this.#requests = { limit, remaining: limit - grant.used, resetMs: grant.resetMs };
          throw this.#tooMany(`Rate limit reached for ${scope.label} on requests per minute (RPM): Limit ${limit}, Used ${grant.used}, Requested 1. Please try again in ${seconds(grant.waitMs)}.`, grant.waitMs, 'requests');
        }
        counted.push({ scope, ref: grant.ref });
        this.#requests = tighter(this.#requests, { limit, remaining: limit - grant.used, resetMs: grant.resetMs });
      }
      await this.#peekTokens(now);
      if (this.#finished) throw requestGone();
    } catch (error) {
      await this.#releaseSlots();
      throw error;
    }
  }

  /** True when a token limit applies, i.e. when estimating the request's tokens is worth it. */
  get pricesTokens(): boolean {
    return this.#scopes.some((scope) => scope.limits.tokensPerMinute !== undefined || scope.limits.tokensPerMonth !== undefined);
  }

  /** OpenAI's x-ratelimit-* headers for the limits that apply. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.#requests) rateLimitHeaders('requests', this.#requests, headers);
    if (this.#tokens) rateLimitHeaders('tokens', this.#tokens, headers);
    return headers;
  }

  /** Only the x-ratelimit-*-tokens headers: what a token reservation changes after admission. */
  tokenHeaders(): Record<string, string> {
    return this.#tokens ? rateLimitHeaders('tokens', this.#tokens) : {};
  }

  /**
   * Reserves the request's tokens, or throws 429 (wait) or 400 (it can never fit). Returns the
   * output limit per answer the request must be held to, when a monthly budget's last tokens are
   * all it may use and it set no limit of its own; null otherwise.
   */
  async reserveTokens(estimate: TokenEstimate): Promise<number | null> {
    if (this.#holds) return null;
    if (this.#finished) throw requestGone();
    const now = this.#clock();
    const period = (this.#period = monthOf(now));
    let cap: number | null = null;
    if (estimate.outputParam === null && estimate.output > 0) {
      const fitted = await this.#fitDefaultOutput(estimate, period);
      if (fitted.capped) cap = Math.max(estimate.minOutput, Math.floor(fitted.output / estimate.choices));
      estimate = { ...estimate, output: cap === null ? fitted.output : cap * estimate.choices };
    }
    const amount = estimate.input + estimate.output;
    if (isBatchStore(this.#store)) return this.#reserveBatch(this.#store, estimate, amount, now, cap);
    const holds: TokenHold[] = [];
    try {
      for (const scope of this.#scopes) {
        const limit = scope.limits.tokensPerMinute;
        if (limit === undefined) continue;
        if (amount > limit) throw neverFits(estimate, amount, limit, `${scope.label}'s limit of ${limit} tokens per minute`);
        const grant = await this.#store.tryAdd(scope.keys.tpm, amount, limit, now);
        if (!grant.granted) {
          const used = grant.used;
          this.#tokens = { limit, remaining: limit - used, resetMs: grant.resetMs };
          throw this.#tooMany(`Rate limit reached for ${scope.label} on tokens per minute (TPM): Limit ${limit}, Used ${used}, Requested ${amount}. Please try again in ${seconds(grant.waitMs)}.`, grant.waitMs, 'tokens');
        }
        holds.push({ scope, ref: grant.ref, month: false });
        this.#tokens = tighter(this.#tokens, { limit, remaining: limit - grant.used, resetMs: grant.resetMs });
      }
      for (const scope of this.#scopes) {
        const limit = scope.limits.tokensPerMonth;
        if (limit === undefined) continue;
        if (amount > limit) throw neverFits(estimate, amount, limit, `${scope.label}'s monthly budget of ${limit} tokens`);
        const grant = await this.#store.reserveBudget(scope.id, period, amount, limit);
        if (!grant.granted) {
          throw this.#tooMany(
            `Monthly token budget reached for ${scope.label}: Limit ${limit}, Used ${grant.used}, Requested ${amount}. The budget renews at ${nextMonthStart(now).toISOString()}.`,
            nextMonthStart(now).getTime() - now,
            'monthly',
          );
        }
        holds.push({ scope, ref: null, month: true });
      }
      // The request ended while the store answered: finish() found nothing to settle, so refund here.
      if (this.#finished) throw requestGone();
    } catch (error) {
      await this.#settle(holds, amount, 0);
      throw error;
    }
    this.#holds = holds;
    this.#reserved = amount;
    return cap;
  }

  /**
   * The default answer reservation is a guess, not the client's demand. Against a per-minute limit
   * it shrinks to what the limit leaves after the input, so it is never refused as too large (it
   * may wait). Against a monthly budget, where waiting means weeks, it shrinks to the room left
   * and the answer is capped to it, so no answer can run past the budget.
   */
  async #fitDefaultOutput(estimate: TokenEstimate, period: string): Promise<{ output: number; capped: boolean }> {
    let output = estimate.output;
    let capped = false;
    for (const scope of this.#scopes) {
      const { tokensPerMinute, tokensPerMonth } = scope.limits;
      if (tokensPerMinute !== undefined) output = Math.min(output, tokensPerMinute - estimate.input);
      if (tokensPerMonth !== undefined) {
        const room = tokensPerMonth - (await this.#store.budgetUsed(scope.id, period)) - estimate.input;
        if (room < output) [output, capped] = [room, true];
      }
    }
    return { output: Math.max(estimate.minOutput, 1, output), capped };
  }

  /**
   * The whole admission as one store call (one round trip to a shared store), all or nothing: the
   * same checks, in the same order, with the same refusals as the call-by-call path above.
   */
  async #admitBatch(store: BatchLimitStore, now: number): Promise<void> {
    const slotScopes = this.#scopes.filter((scope) => scope.limits.concurrentRequests !== undefined);
    const requestScopes = this.#scopes.filter((scope) => scope.limits.requestsPerMinute !== undefined);
    const tokenScopes = this.#scopes.filter((scope) => scope.limits.tokensPerMinute !== undefined);
    const outcome = await store.admitBatch(
      {
        slots: slotScopes.map((scope) => ({ key: scope.keys.open, max: scope.limits.concurrentRequests! })),
        requests: requestScopes.map((scope) => ({ key: scope.keys.rpm, limit: scope.limits.requestsPerMinute! })),
        peeks: tokenScopes.map((scope) => scope.keys.tpm),
      },
      now,
    );
    if (!outcome.admitted) {
      if ('slot' in outcome) {
        const scope = slotScopes[outcome.slot.index];
        const max = scope.limits.concurrentRequests!;
        throw this.#tooMany(`Too many concurrent requests for ${scope.label}: Limit ${max}, Open ${outcome.slot.open}. Retry when one of them has finished.`, CONCURRENCY_RETRY_MS, 'concurrency');
      }
      const { index, used, waitMs, resetMs } = outcome.request;
      const scope = requestScopes[index];
      const limit = scope.limits.requestsPerMinute!;
      this.#requests = { limit, remaining: limit - used, resetMs };
      throw this.#tooMany(`Rate limit reached for ${scope.label} on requests per minute (RPM): Limit ${limit}, Used ${used}, Requested 1. Please try again in ${seconds(waitMs)}.`, waitMs, 'requests');
    }
    this.#slots = slotScopes;
    outcome.requests.forEach((grant, i) => {
      const limit = requestScopes[i].limits.requestsPerMinute!;
      this.#requests = tighter(this.#requests, { limit, remaining: limit - grant.used, resetMs: grant.resetMs });
    });
    outcome.peeks.forEach((peek, i) => {
      const limit = tokenScopes[i].limits.tokensPerMinute!;
      this.#tokens = tighter(this.#tokens, { limit, remaining: limit - peek.used, resetMs: peek.resetMs });
    });
    // The request ended while the store answered: finish() found no slot to release, so release here.
    if (this.#finished) {
      await this.#releaseSlots();
      throw requestGone();
    }
  }

  /** The whole token reservation as one store call, all or nothing (see #admitBatch). */
  async #reserveBatch(store: BatchLimitStore, estimate: TokenEstimate, amount: number, now: number, cap: number | null): Promise<number | null> {
    const windowScopes = this.#scopes.filter((scope) => scope.limits.tokensPerMinute !== undefined);
    const budgetScopes = this.#scopes.filter((scope) => scope.limits.tokensPerMonth !== undefined);
    for (const scope of windowScopes) {
      const limit = scope.limits.tokensPerMinute!;
      if (amount > limit) throw neverFits(estimate, amount, limit, `${scope.label}'s limit of ${limit} tokens per minute`);
    }
    for (const scope of budgetScopes) {
      const limit = scope.limits.tokensPerMonth!;
      if (amount > limit) throw neverFits(estimate, amount, limit, `${scope.label}'s monthly budget of ${limit} tokens`);
    }
    const outcome = await store.reserveBatch(
      {
        amount,
        windows: windowScopes.map((scope) => ({ key: scope.keys.tpm, limit: scope.limits.tokensPerMinute! })),
        budgets: budgetScopes.map((scope) => ({ key: scope.id, limit: scope.limits.tokensPerMonth! })),
        period: this.#period,
      },
      now,
    );
    if (!outcome.granted) {
      if ('window' in outcome) {
        const { index, used, waitMs, resetMs } = outcome.window;
        const scope = windowScopes[index];
        const limit = scope.limits.tokensPerMinute!;
        this.#tokens = { limit, remaining: limit - used, resetMs };
        throw this.#tooMany(`Rate limit reached for ${scope.label} on tokens per minute (TPM): Limit ${limit}, Used ${used}, Requested ${amount}. Please try again in ${seconds(waitMs)}.`, waitMs, 'tokens');
      }
      const scope = budgetScopes[outcome.budget.index];
      const limit = scope.limits.tokensPerMonth!;
      throw this.#tooMany(
        `Monthly token budget reached for ${scope.label}: Limit ${limit}, Used ${outcome.budget.used}, Requested ${amount}. The budget renews at ${nextMonthStart(now).toISOString()}.`,
        nextMonthStart(now).getTime() - now,
        'monthly',
      );
    }
    const holds: TokenHold[] = [];
    outcome.windows.forEach((grant, i) => {
      const scope = windowScopes[i];
      const limit = scope.limits.tokensPerMinute!;
      holds.push({ scope, ref: grant.ref, month: false });
      this.#tokens = tighter(this.#tokens, { limit, remaining: limit - grant.used, resetMs: grant.resetMs });
    });
    for (const scope of budgetScopes) holds.push({ scope, ref: null, month: true });
    if (this.#finished) {
      await this.#settle(holds, amount, 0);
      throw requestGone();
    }
    this.#holds = holds;
    this.#reserved = amount;
    return cap;
  }

  /** Releases and settles; safe to call more than once (only the first call counts). */
  async finish(status: number, answered: boolean, usage: SettledUsage | null): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    // Without reported usage: an error answer cost nothing; an answer that went out (a stream cut
    // short, a disconnect) may have been billed upstream, so the reservation stands.
    const actual = usage ? usage.inputTokens + usage.outputTokens : answered && status < 400 ? this.#reserved : 0;
    // Started together: a shared store sends them in one write (one round trip), off the answer's path.
    const settling = this.#holds ? this.#settle(this.#holds, this.#reserved, actual) : actual > 0 ? this.#recordUnreserved(actual) : null;
    await Promise.all([this.#releaseSlots(), settling]);
  }

  async #settle(holds: TokenHold[], reserved: number, actual: number): Promise<void> {
    const now = this.#clock();
    await Promise.all(
      holds.map((hold) => {
        if (hold.month) return this.#store.settleBudget(hold.scope.id, this.#period, reserved, actual);
        if (hold.ref !== null) return this.#store.adjust(hold.scope.keys.tpm, hold.ref, actual - reserved, now);
        return null;
      }),
    );
  }

  /** Usage from endpoints that reserve nothing ahead (images, audio) still counts afterwards. */
  async #recordUnreserved(actual: number): Promise<void> {
    const now = this.#clock();
    const period = monthOf(now);
    for (const scope of this.#scopes) {
      if (scope.limits.tokensPerMinute !== undefined) await this.#store.record(scope.keys.tpm, actual, now);
      if (scope.limits.tokensPerMonth !== undefined) await this.#store.settleBudget(scope.id, period, 0, actual);
    }
  }

  async #peekTokens(now: number): Promise<void> {
    for (const scope of this.#scopes) {
      const limit = scope.limits.tokensPerMinute;
      if (limit === undefined) continue;
      const { used, resetMs } = await this.#store.peek(scope.keys.tpm, now);
      this.#tokens = tighter(this.#tokens, { limit, remaining: limit - used, resetMs });
    }
  }

  async #releaseSlots(): Promise<void> {
    const slots = this.#slots;
    this.#slots = [];
    await Promise.all(slots.map((scope) => this.#store.release(scope.keys.open)));
  }

  /** `limit` names the limit that refused (requests, tokens, concurrency, monthly), for metrics. */
  #tooMany(message: string, waitMs: number, limit: string): ApiError {
    return new ApiError(429, 'rate_limit_exceeded', message, { type: 'rate_limit_error', headers: { ...this.headers(), ...retryHeaders(waitMs) }, reason: limit });
  }
}

/** Thrown by admission or reservation that completed after the request had ended; nobody reads it. */
function requestGone(): ApiError {
  return new ApiError(400, 'request_aborted', 'The request ended before its limits were checked.');
}

/** The report with less room left is the one a client must respect. */
function tighter(current: WindowReport | null, next: WindowReport): WindowReport {
  if (!current) return next;
  return next.remaining < current.remaining || (next.remaining === current.remaining && next.resetMs > current.resetMs) ? next : current;
}

function neverFits(estimate: TokenEstimate, amount: number, limit: number, what: string): ApiError {
  const output = estimate.outputParam ? `${estimate.outputParam} ${estimate.output}` : `${estimate.output} reserved for the answer`;
  const fix = estimate.outputParam ? `Lower ${estimate.outputParam} or shorten the input.` : 'Set a lower max_tokens or shorten the input.';
  return new ApiError(400, 'tokens_exceed_limit', `This request needs about ${amount} tokens (about ${estimate.input} of input plus ${output}), more than ${what} (${limit}), so it can never be admitted. ${fix}`, {
    param: estimate.outputParam,
  });
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.ceil(ms)}ms` : `${Math.ceil(ms / 100) / 10}s`;
}

let cachedMonth = { label: '', start: 0, end: 0 };

/** "2026-11" for a time in November 2026 (UTC); formatted once per month, not per request. */
export function monthOf(now: number): string {
  if (now >= cachedMonth.start && now < cachedMonth.end) return cachedMonth.label;
  const date = new Date(now);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  cachedMonth = { label: date.toISOString().slice(0, 7), start, end: nextMonthStart(now).getTime() };
  return cachedMonth.label;
}

function nextMonthStart(now: number): Date {
  const date = new Date(now);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1));
}
