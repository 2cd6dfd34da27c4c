// The answers to a request a limit refuses: each names the limit that was hit and carries the wait
// the official SDKs honour (429), or says why it can never fit (400) so that it is not retried forever.
import { ApiError } from '../http/errors.ts';
import type { AdmissionPlan } from './admission-plan.ts';
import type { TokenEstimate } from './estimate.ts';
import { retryHeaders } from './headers.ts';
import type { Refusal } from './limit-store.ts';
import { formatMoney } from './money.ts';
import { nextMonthStart } from './month.ts';

/** Nothing tells when a concurrent request will end; a second is a polite first retry. */
const CONCURRENCY_RETRY_MS = 1000;

/** `headers` are the x-ratelimit-* headers the refusal carries besides its retry hints. */
export function refusalError(refusal: Refusal, plan: AdmissionPlan, estimate: TokenEstimate | null, now: number, headers: Record<string, string>, currency = 'USD'): ApiError {
  switch (refusal.limit) {
    case 'concurrency': {
      const scope = plan.slots[refusal.index];
      const max = scope.limits.concurrentRequests!;
      return tooMany(`Too many concurrent requests for ${scope.label}: Limit ${max}, Open ${refusal.open}. Retry when one of them has finished.`, CONCURRENCY_RETRY_MS, 'concurrency', headers);
    }
    case 'requests': {
      const scope = plan.requests[refusal.index];
      const limit = scope.limits.requestsPerMinute!;
      return tooMany(`Rate limit reached for ${scope.label} on requests per minute (RPM): Limit ${limit}, Used ${refusal.used}, Requested 1. Please try again in ${seconds(refusal.waitMs)}.`, refusal.waitMs, 'requests', headers);
    }
    case 'tokens': {
      const scope = plan.tokens[refusal.index];
      const limit = scope.limits.tokensPerMinute!;
      return tooMany(`Rate limit reached for ${scope.label} on tokens per minute (TPM): Limit ${limit}, Used ${refusal.used}, Requested ${refusal.amount}. Please try again in ${seconds(refusal.waitMs)}.`, refusal.waitMs, 'tokens', headers);
    }
    case 'monthly': {
      const scope = plan.budgets[refusal.index];
      const renews = nextMonthStart(now);
      return tooMany(`Monthly token budget reached for ${scope.label}: Limit ${scope.limits.tokensPerMonth!}, Used ${refusal.used}, Requested ${refusal.amount}. The budget renews at ${renews.toISOString()}.`, renews.getTime() - now, 'monthly', headers);
    }
    case 'spend': {
      const scope = plan.spendBudgets[refusal.index];
      const renews = nextMonthStart(now).toISOString();
      const limit = scope.limits.spendPerMonth!;
      const left = Math.max(0, limit - refusal.used);
      const hint = estimate?.outputParam ? ` Lower ${estimate.outputParam} to fit what is left.` : '';
      const message = `Monthly spend budget reached for ${scope.label}: Limit ${formatMoney(limit)} ${currency}, Spent or reserved ${formatMoney(refusal.used)}, Left ${formatMoney(left)}, This request may cost up to ${formatMoney(refusal.amount)}.${hint} The budget renews at ${renews}.`;
      // OpenAI's quota answer: the SDKs do not retry it (x-should-retry), nothing would change before the month does.
      return new ApiError(429, 'insufficient_quota', message, { type: 'insufficient_quota', headers: { ...headers, 'x-should-retry': 'false' }, reason: 'spend' });
    }
    case 'too-large': {
      const scope = refusal.budget ? plan.budgets[refusal.index] : plan.tokens[refusal.index];
      const limit = refusal.budget ? scope.limits.tokensPerMonth! : scope.limits.tokensPerMinute!;
      const what = refusal.budget ? `${scope.label}'s monthly budget of ${limit} tokens` : `${scope.label}'s limit of ${limit} tokens per minute`;
      return neverFits(estimate!, refusal.amount, limit, what);
    }
  }
}

/** Thrown by an admission that completed after the request had ended; nobody reads it. */
export function requestGone(): ApiError {
  return new ApiError(400, 'request_aborted', 'The request ended before its limits were checked.');
}

/** `limit` names the limit that refused (requests, tokens, concurrency, monthly), for metrics. */
function tooMany(message: string, waitMs: number, limit: string, headers: Record<string, string>): ApiError {
  return new ApiError(429, 'rate_limit_exceeded', message, { type: 'rate_limit_error', headers: { ...headers, ...retryHeaders(waitMs) }, reason: limit });
}

function neverFits(estimate: TokenEstimate, amount: number, limit: number, what: string): ApiError {
  const output = estimate.outputParam ? `${estimate.outputParam} ${estimate.output}` : `${amount - estimate.input} reserved for the answer`;
  const fix = estimate.outputParam ? `Lower ${estimate.outputParam} or shorten the input.` : 'Set a lower max_tokens or shorten the input.';
  return new ApiError(400, 'tokens_exceed_limit', `This request needs about ${amount} tokens (about ${estimate.input} of input plus ${output}), more than ${what} (${limit}), so it can never be admitted. ${fix}`, {
    param: estimate.outputParam,
  });
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.ceil(ms)}ms` : `${Math.ceil(ms / 100) / 10}s`;
}
