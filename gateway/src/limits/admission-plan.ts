// What a request's admission asks of the store, derived from the scopes that apply to it: which
// scopes have which kind of limit (the store's answers and refusals are by position in these lists),
// and their counters' keys with the limits. The scope list of a key is cached (scopes.ts), so its
// plan is built once per key and snapshot, not per request.
import type { TokenEstimate } from './estimate.ts';
import type { Admission, Bound, TokenAsk } from './limit-store.ts';
import type { SpendAsk } from './limit-store.ts';
import type { LimitScope } from './scopes.ts';

export interface AdmissionPlan {
  account: string;
  /** Scopes with each kind of limit, in order. */
  slots: LimitScope[];
  requests: LimitScope[];
  tokens: LimitScope[];
  budgets: LimitScope[];
  spendBudgets: LimitScope[];
  /** The same as the store's bounds. */
  slotBounds: Bound[];
  requestBounds: Bound[];
  tokenBounds: Bound[];
  budgetBounds: Bound[];
  spendBounds: Bound[];
  /** A token limit applies: estimating the request's tokens is worth it. */
  pricesTokens: boolean;
}

const plans = new WeakMap<readonly LimitScope[], AdmissionPlan>();

export function admissionPlanOf(scopes: readonly LimitScope[]): AdmissionPlan {
  let plan = plans.get(scopes);
  if (!plan) plans.set(scopes, (plan = build(scopes)));
  return plan;
}

function build(scopes: readonly LimitScope[]): AdmissionPlan {
  const slots = scopes.filter((s) => s.limits.concurrentRequests !== undefined);
  const requests = scopes.filter((s) => s.limits.requestsPerMinute !== undefined);
  const tokens = scopes.filter((s) => s.limits.tokensPerMinute !== undefined);
  const budgets = scopes.filter((s) => s.limits.tokensPerMonth !== undefined);
  const spendBudgets = scopes.filter((s) => s.limits.spendPerMonth !== undefined);
  return {
    account: scopes[0]?.account ?? '',
    slots,
    requests,
    tokens,
    budgets,
    spendBudgets,
    slotBounds: slots.map((s) => ({ key: s.keys.open, limit: s.limits.concurrentRequests! })),
    requestBounds: requests.map((s) => ({ key: s.keys.rpm, limit: s.limits.requestsPerMinute! })),
    tokenBounds: tokens.map((s) => ({ key: s.keys.tpm, limit: s.limits.tokensPerMinute! })),
    budgetBounds: budgets.map((s) => ({ key: s.id, limit: s.limits.tokensPerMonth! })),
    spendBounds: spendBudgets.map((s) => ({ key: s.keys.spend, limit: s.limits.spendPerMonth! })),
    pricesTokens: tokens.length > 0 || budgets.length > 0,
  };
}

/**
 * The admission of one request; `estimate` null when it reserves no tokens, `spend` null when it
 * costs nothing or no spend budget applies.
 */
export function admissionOf(plan: AdmissionPlan, estimate: TokenEstimate | null, period: string, spend: SpendAsk | null = null): Admission {
  return {
    account: plan.account,
    slots: plan.slotBounds,
    requests: plan.requestBounds,
    tokenWindows: plan.tokenBounds,
    budgets: plan.budgetBounds,
    period,
    tokens: estimate ? tokenAsk(plan, estimate) : null,
    spendBudgets: plan.spendBounds,
    spend: plan.spendBounds.length > 0 ? spend : null,
  };
}

/** True when the admission checks nothing in the store (a budget alone, and no tokens to reserve). */
export function checksNothing(admission: Admission): boolean {
  return admission.slots.length === 0 && admission.requests.length === 0 && (admission.tokens === null ? admission.tokenWindows.length === 0 : false) && !admission.spend;
}

/**
 * The default answer reservation (no output limit set by the client) is a guess, not the client's
 * demand: against a per-minute limit it shrinks to what the limit leaves after the input, so it is
 * never refused as too large (it may wait); against a monthly budget the store fits it to the room
 * left (token-fit.ts).
 */
function tokenAsk(plan: AdmissionPlan, estimate: TokenEstimate): TokenAsk {
  const fit = estimate.outputParam === null && estimate.output > 0;
  let output = estimate.output;
  if (fit) for (const window of plan.tokenBounds) output = Math.min(output, window.limit - estimate.input);
  return { input: estimate.input, output, fit, minOutput: estimate.minOutput, choices: estimate.choices };
}
