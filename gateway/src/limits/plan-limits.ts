// Plan limits as one runtime: the store (with monthly usage loaded from the data directory), the
// admission every authenticated request goes through, and what routes call to reserve tokens.
// Koa-free: the edge (http/app.ts) calls admit() with the request's exchange and sets the headers.
import type { Model } from '@tollgate/crds';
import type { Logger } from 'pino';
import type { Exchange } from '../exchange/exchange.ts';
import type { JsonObject } from '../http/body.ts';
import { admissionPlanOf } from './admission-plan.ts';
import { BudgetFile } from './budget-file.ts';
import { estimateInput, estimateTokens, type TokenEndpoint, type TokenEstimate } from './estimate.ts';
import type { LimitStore } from './limit-store.ts';
import { MemoryLimitStore } from './memory-limit-store.ts';
import { monthOf, previousMonthOf } from './month.ts';
import { fixedAsk, imagePrice, pricesOf, settledCost, tokensAsk, type PricedBy, type Prices, type SpendAsk } from './pricing.ts';
import { RequestLimits } from './request-limits.ts';
import { LimitScopes } from './scopes.ts';
import { spendOf } from './token-fit.ts';

const PRICED_AFTERWARDS = /^\/v1\/(images|audio)\//;
/**
 * The routes that call reserveByParameters() once they have read the body: with a spend budget their
 * admission waits for it, so that their worst cost is reserved in the same store call.
 */
const PRICED_BY_ROUTE = /^\/v1\/(?:images\/|audio\/|moderations\/?$)/;
/**
 * The routes that call reserveTokens() once they have read the body (as the router matches them: an
 * optional trailing slash). Their admission waits for it, so that it and the token reservation are
 * one store call.
 */
const ADMITTED_WITH_TOKENS = /^\/v1\/(?:chat\/completions|completions|responses|embeddings|messages)\/?$/;
const NOTHING_AHEAD: TokenEstimate = { input: 0, output: 0, outputParam: null, choices: 1, minOutput: 0 };

export interface PlanLimitsOptions {
  dataDir: string;
  log: Logger;
  clock: () => number;
  /** Name of the Plan whose limits apply to accounts without a plan. */
  freePlan: string;
  /** Reserved for the answer when a request sets no output limit, before settlement. */
  reservedOutputTokens: number;
  /** The currency of every price and spend budget (TOLLGATE_CURRENCY), named in messages. */
  currency?: string;
  /** Live gateway replicas; each enforces its share of every limit. */
  replicas: () => number;
  /**
   * Where limit state lives; by default in this process, with monthly usage persisted in the data
   * directory. Any LimitStore will do, synchronous or not (a shared one, a test's delayed one).
   */
  store?: LimitStore;
}

export interface PlanLimits {
  /**
   * Admits the exchange's request (429 when a limit refuses it) and leaves its lease on
   * `exchange.limits`; returns the x-ratelimit-* headers to send. A token-priced request is admitted
   * later, by reserveTokens(), together with its tokens (null here). Settlement is an end hook of the
   * exchange, registered before anything is taken, so a request that ends during admission leaks nothing.
   */
  admit(exchange: Exchange): Promise<Record<string, string> | null>;
  store: LimitStore;
  reservedOutputTokens: number;
  currency: string;
  close(): Promise<void>;
}

/** How a priced request is to be charged once it ends: its Model's prices, what prices it, its worst cost. */
interface PricedRequest {
  prices: Prices;
  by: PricedBy;
  worst: number;
}

/** Set by the route once the model is known (null for service-test and unpriced models). */
const priced = new WeakMap<Exchange, PricedRequest>();

/** What the exchange cost (micros), once it ended; null when it was not priced. */
function costOf(exchange: Exchange): number | null {
  const request = priced.get(exchange);
  if (!request) return null;
  // Reserved in a spend budget: the store's worst case (its output fitted); otherwise the request's own.
  const reserved = exchange.limits?.spendReserved || request.worst;
  return settledCost(request.prices, request.by, reserved, exchange.usage, exchange.status < 400, exchange.answered);
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
      return memory.budgetSnapshot([monthOf(now), previousMonthOf(now)]);
    });
    store = memory;
    close = () => file.close();
  }
  const scopes = new LimitScopes(options.freePlan);

  const currency = options.currency ?? 'USD';
  const admit = async (exchange: Exchange): Promise<Record<string, string> | null> => {
    const principal = exchange.principal;
    if (!principal) return null;
    const applicable = scopes.of(principal, options.replicas());
    if (applicable.length === 0) {
      exchange.onEnd(() => void (exchange.cost = costOf(exchange)));
      return null;
    }
    const limits = new RequestLimits(admissionPlanOf(applicable), store, options.clock, currency);
    exchange.limits = limits;
    exchange.onEnd(() => limits.finish(exchange.status, exchange.answered, exchange.usage, (exchange.cost = costOf(exchange))));
    if (exchange.method !== 'POST') await limits.admit(null);
    else if (ADMITTED_WITH_TOKENS.test(exchange.path)) return null;
    // Images, audio and moderations are priced by their parameters: with a spend budget their route
    // admits them once it has read them (reserveByParameters).
    else if (PRICED_BY_ROUTE.test(exchange.path) && limits.pricesSpend) return null;
    // Images and audio are counted in tokens only once answered (when at all); an account whose
    // monthly budget is spent must still not start one.
    else await limits.admit(PRICED_AFTERWARDS.test(exchange.path) && limits.pricesTokens ? NOTHING_AHEAD : null);
    return limits.headers();
  };

  return { admit, store, reservedOutputTokens: options.reservedOutputTokens, currency, close };
}

/**
 * Admits a token-priced request with its tokens reserved, once its body is read (one store call).
 * Throws 429 (wait) or 400 (can never fit). When a monthly budget is nearly spent and the request
 * set no output limit, the limit is written into the body (the answer ends with finish_reason
 * "length", as any capped answer does) so that neither service-test nor an upstream overspends.
 * Returns the x-ratelimit-* headers to set (null when no limit applies).
 */
export async function reserveTokens(exchange: Exchange, limits: PlanLimits, body: JsonObject, endpoint: TokenEndpoint): Promise<Record<string, string> | null> {
  const requestLimits = exchange.limits;
  const model = modelOfExchange(exchange);
  const prices = pricesOf(model);
  if (!requestLimits && !prices) return null;
  // Under a spend budget an answer without an output limit is held to what was reserved for it: the
  // model's own limit when its manifest names one (fitted to the budget's room), not the gateway's guess.
  const defaultOutput = prices && requestLimits?.pricesSpend ? (model?.spec.maxOutputTokens ?? limits.reservedOutputTokens) : limits.reservedOutputTokens;
  const estimate = prices || requestLimits?.pricesTokens ? estimateTokens(body, endpoint, defaultOutput) : null;
  const spend = prices && estimate ? tokensAsk(prices, estimate.input) : null;
  if (prices) priced.set(exchange, { prices, by: 'tokens', worst: spendOf(spend!, estimate!.output) });
  if (!requestLimits) return null;
  const cap = await requestLimits.admit(requestLimits.pricesTokens || requestLimits.pricesSpend ? estimate : null, spend);
  // A top-level member: a forwarded body is sent as its bytes with changed top-level members spliced in (http/body.ts).
  if (cap !== null) body[endpoint === 'responses' ? 'max_output_tokens' : endpoint === 'completions' ? 'max_tokens' : 'max_completion_tokens'] = cap;
  return requestLimits.headers();
}

/** What an image, audio or moderation request asks for, from which its worst cost follows. */
export type ParameterAsk =
  | { by: 'images'; n: unknown; size: unknown; quality: unknown }
  | { by: 'speech'; input: unknown }
  | { by: 'audio'; fileBytes: number }
  /** Its `input` at the model's input price (moderations write no output), and at least `perRequest`. */
  | { by: 'moderation'; input: unknown };

/**
 * The lowest bitrate speech is commonly encoded at (16 kbit/s): a file of B bytes holds at most about
 * B / 2000 seconds of audio, the most a transcription of it can be billed for before its duration is known.
 */
const AUDIO_BYTES_PER_SECOND = 2000;

/**
 * Prices an image, audio or moderation request by its parameters and admits it, when its admission
 * waited for them (a spend budget applies): its worst cost is reserved in every spend budget (429
 * insufficient_quota when a budget cannot pay it). Returns the x-ratelimit-* headers to set.
 */
export async function reserveByParameters(exchange: Exchange, limits: PlanLimits, ask: ParameterAsk): Promise<Record<string, string> | null> {
  const prices = pricesOfExchange(exchange);
  let spend: SpendAsk | null = null;
  if (prices) {
    if (ask.by === 'images') {
      const n = typeof ask.n === 'number' && Number.isInteger(ask.n) && ask.n > 0 ? ask.n : typeof ask.n === 'string' && /^[1-9][0-9]{0,2}$/.test(ask.n) ? Number(ask.n) : 1;
      spend = fixedAsk(prices, 'images', { images: n, imagePrice: imagePrice(prices, ask.size, ask.quality) });
    } else if (ask.by === 'speech') spend = fixedAsk(prices, 'speech', { characters: typeof ask.input === 'string' ? ask.input.length : 0 });
    else if (ask.by === 'audio') spend = fixedAsk(prices, 'audio', { seconds: ask.fileBytes / AUDIO_BYTES_PER_SECOND });
    else spend = { ...tokensAsk(prices, estimateInput(ask.input)), outputPerMillion: 0 };
    // A moderation is settled as tokens: by the usage its upstream reports, or (none reported) its reservation.
    priced.set(exchange, { prices, by: ask.by === 'moderation' ? 'tokens' : ask.by, worst: spendOf(spend, 0) });
  }
  const requestLimits = exchange.limits;
  if (!requestLimits) return null;
  // Images and audio are counted in tokens once answered, so a spent token budget refuses them;
  // moderations never count in token limits.
  await requestLimits.admit(requestLimits.pricesTokens && ask.by !== 'moderation' ? NOTHING_AHEAD : null, spend);
  return requestLimits.headers();
}

/** The prices of the Model the request names; null for service-test and models without pricing. */
function pricesOfExchange(exchange: Exchange): Prices | null {
  return pricesOf(modelOfExchange(exchange));
}

/** The Model the request names; undefined for service-test. */
function modelOfExchange(exchange: Exchange): Model | undefined {
  const name = exchange.modelRequested;
  if (!name || !exchange.principal) return undefined;
  return exchange.principal.snapshot.models.get(name);
}
