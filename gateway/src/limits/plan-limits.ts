// Plan limits as one runtime: the store (with monthly usage loaded from the data directory), the
// middleware that admits every authenticated request, and what routes call to reserve tokens.
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { JsonObject } from '../http/body.ts';
import { setHeaders } from '../http/response-headers.ts';
import type { GatewayState } from '../http/state.ts';
import { BudgetFile } from './budget-file.ts';
import { estimateTokens, type TokenEndpoint, type TokenEstimate } from './estimate.ts';
import { MemoryLimitStore, type LimitStore } from './limit-store.ts';
import { RequestLimits, monthOf } from './request-limits.ts';
import { LimitScopes } from './scopes.ts';

const PRICED_AFTERWARDS = /^\/v1\/(images|audio)\//;
const NOTHING_AHEAD: TokenEstimate = { input: 0, output: 0, outputParam: null, choices: 1, minOutput: 0 };

export interface PlanLimitsOptions {
  dataDir: string;
  log: Logger;
  clock: () => number;
  /** Name of the Plan whose limits apply to accounts without a plan. */
  freePlan: string;
  /** Reserved for the answer when a request sets no output limit, before settlement. */
  reservedOutputTokens: number;
  /** Live gateway replicas; each enforces its share of every limit. */
  replicas: () => number;
  /** Where limit state lives; by default in this process, with monthly usage persisted in the data directory. */
  store?: LimitStore;
}

export interface PlanLimits {
  middleware: Middleware<GatewayState>;
  store: LimitStore;
  reservedOutputTokens: number;
  close(): Promise<void>;
}

export async function createPlanLimits(options: PlanLimitsOptions): Promise<PlanLimits> {
  let store: LimitStore;
  let close = async () => {};
  if (options.store) store = options.store;
  else {
    const file = new BudgetFile(options.dataDir, options.log);
    const memory = new MemoryLimitStore(await file.load(), () => file.changed());
    // Only this month and the last are kept: the last so a request settling across midnight of the
    // 1st still finds its period.
    file.source(() => {
      const now = options.clock();
      return memory.budgetSnapshot([monthOf(now), monthOf(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 0))]);
    });
    store = memory;
    close = () => file.close();
  }
  const scopes = new LimitScopes(options.freePlan);

  const middleware: Middleware<GatewayState> = async (ctx, next) => {
    const principal = ctx.state.principal;
    if (!principal) return next();
    const applicable = scopes.of(principal, options.replicas());
    if (applicable.length === 0) return next();
    const limits = new RequestLimits(applicable, store, options.clock);
    await limits.admit();
    // 'close' comes on every ending: after the last byte, on an error answer, on a disconnect.
    ctx.res.once('close', () => {
      limits.finish(ctx.status, ctx.res.headersSent, ctx.state).catch((error) => options.log.error({ err: error, requestId: ctx.state.requestId }, 'could not settle plan limits'));
    });
    ctx.state.limits = limits;
    setHeaders(ctx, limits.headers());
    // Images and audio are priced only once answered (when at all); an account whose monthly
    // budget is spent must still not start one.
    if (ctx.method === 'POST' && PRICED_AFTERWARDS.test(ctx.path) && limits.pricesTokens) await limits.reserveTokens(NOTHING_AHEAD);
    await next();
  };

  return { middleware, store, reservedOutputTokens: options.reservedOutputTokens, close };
}

/**
 * Reserves a token-priced request's tokens before it runs; a no-op when no token limit applies.
 * Throws 429 (wait) or 400 (can never fit). When a monthly budget is nearly spent and the request
 * set no output limit, the limit is written into the body (the answer ends with finish_reason
 * "length", as any capped answer does) so that neither service-test nor an upstream overspends.
 */
export async function reserveTokens(ctx: Context, limits: PlanLimits, body: JsonObject, endpoint: TokenEndpoint): Promise<void> {
  const requestLimits = (ctx.state as GatewayState).limits;
  if (!requestLimits?.pricesTokens) return;
  const cap = await requestLimits.reserveTokens(estimateTokens(body, endpoint, limits.reservedOutputTokens));
  // A top-level member: a forwarded body is sent as its bytes with changed top-level members spliced in (http/body.ts).
  if (cap !== null) body[endpoint === 'responses' ? 'max_output_tokens' : 'max_completion_tokens'] = cap;
  // The request headers were set at admission; only the tokens' changed.
  setHeaders(ctx, requestLimits.tokenHeaders());
}
