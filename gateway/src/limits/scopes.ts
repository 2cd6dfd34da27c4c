// Which limits apply to a request: the account's (its plan's, or the free tier's), and the key's
// own when its ApiKey sets lower ones. Each is divided by the number of live replicas, so that N
// replicas each enforcing their share never admit more than the plan in total.
import type { ApiKey, PlanLimits } from '@tollgate/crds';
import type { Principal } from '../exchange/principal.ts';
import { parseMoney } from './money.ts';

/** A Plan's (or ApiKey's) limits as the gateway counts them: spendPerMonth in micros of the currency. */
export interface Limits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  concurrentRequests?: number;
  tokensPerMonth?: number;
  spendPerMonth?: number;
}

export interface LimitScope {
  /** Store key prefix: `account:<name>` or `key:<name>`. */
  id: string;
  /** The account it belongs to (a key's scope too): a shared store keeps an account's keys together. */
  account: string;
  /** For messages: "account acme" or "API key ci-bot". */
  label: string;
  limits: Limits;
  /** The store keys of its counters, built once per scope rather than per request. */
  keys: { open: string; rpm: string; tpm: string; spend: string };
}

/** Used when no Plan named like the free tier exists. service-test costs nothing; these keep one account from starving the rest. */
export const DEFAULT_FREE_LIMITS: Readonly<Limits> = Object.freeze({ requestsPerMinute: 600, tokensPerMinute: 1_000_000, concurrentRequests: 32 });

const LIMIT_NAMES = ['requestsPerMinute', 'tokensPerMinute', 'concurrentRequests', 'tokensPerMonth', 'spendPerMonth'] as const;

/** Limits parsed once per limits object (they belong to one immutable snapshot). */
const parsedLimits = new WeakMap<PlanLimits, Limits>();
function limitsOf(spec: PlanLimits | undefined): Limits | undefined {
  if (!spec) return undefined;
  let limits = parsedLimits.get(spec);
  if (!limits) {
    const { spendPerMonth, ...counts } = spec;
    parsedLimits.set(spec, (limits = spendPerMonth === undefined ? counts : { ...counts, spendPerMonth: parseMoney(spendPerMonth) }));
  }
  return limits;
}

interface Cached {
  replicas: number;
  freeLimits: Limits | undefined;
  scopes: LimitScope[];
}

export class LimitScopes {
  readonly #freePlan: string;
  // ApiKey objects belong to one immutable snapshot, so a cache keyed by them expires with it.
  #cache = new WeakMap<ApiKey, Cached>();

  constructor(freePlan: string) {
    this.#freePlan = freePlan;
  }

  of(principal: Principal, replicas: number): LimitScope[] {
    const freeLimits = principal.plan ? undefined : limitsOf(principal.snapshot.plans.get(this.#freePlan)?.spec.limits);
    const cached = this.#cache.get(principal.key);
    if (cached && cached.replicas === replicas && cached.freeLimits === freeLimits) return cached.scopes;
    const scopes = this.#build(principal, freeLimits, replicas);
    this.#cache.set(principal.key, { replicas, freeLimits, scopes });
    return scopes;
  }

  #build(principal: Principal, freeLimits: Limits | undefined, replicas: number): LimitScope[] {
    const accountName = principal.account.metadata.name;
    const accountLimits: Limits = principal.plan ? (limitsOf(principal.plan.spec.limits) ?? {}) : (freeLimits ?? DEFAULT_FREE_LIMITS);
    const scopes: LimitScope[] = [];
    const account = share(accountLimits, replicas);
    if (hasAny(account)) scopes.push(scope(`account:${accountName}`, `account ${accountName}`, accountName, account));
    const keyLimits = limitsOf(principal.key.spec.limits);
    if (keyLimits) {
      // A key may only lower its account's limits; a higher value would be dead weight.
      const lowered: Limits = {};
      for (const name of LIMIT_NAMES) {
        const value = keyLimits[name];
        if (value !== undefined && (accountLimits[name] === undefined || value < accountLimits[name]!)) lowered[name] = value;
      }
      const key = share(lowered, replicas);
      if (hasAny(key)) scopes.push(scope(`key:${principal.key.metadata.name}`, `API key ${principal.key.metadata.name}`, accountName, key));
    }
    return scopes;
  }
}

function scope(id: string, label: string, account: string, limits: Limits): LimitScope {
  return { id, label, account, limits, keys: { open: `${id}:open`, rpm: `${id}:rpm`, tpm: `${id}:tpm`, spend: `${id}:spend` } };
}

function share(limits: Limits, replicas: number): Limits {
  const shared: Limits = {};
  for (const name of LIMIT_NAMES) {
    const value = limits[name];
    // Never below one: a share of zero would refuse everything on a replica that is still serving.
    if (value !== undefined) shared[name] = replicas > 1 ? Math.max(1, Math.floor(value / replicas)) : value;
  }
  return shared;
}

function hasAny(limits: Limits): boolean {
  return LIMIT_NAMES.some((name) => limits[name] !== undefined);
}
