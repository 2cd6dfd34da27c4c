// This replica's usage for the current month, for the operator's `GET /usage` on the metrics port:
// per account, per API key and per model, each with its tokens, requests and spend (a decimal string
// in the gateway's currency). In memory and per process by design: the operator sums every ready
// replica's answer (scope `replica`); with a shared store the cluster-wide total comes from there
// instead (scope `cluster`, see ClusterUsage). Bounded by the accounts, keys and models in the
// snapshot: only authenticated requests count, and a model only under a name the snapshot knows.
import { hostname } from 'node:os';
import { formatMoney } from '../limits/money.ts';

export interface AccountUsage {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  /** This month's cost, a decimal string in the gateway's currency ("0.00" when nothing was priced). */
  spend?: string;
}

export interface KeyUsage extends AccountUsage {
  /** The account the key belongs to. */
  account: string;
}

/** Counts as they are kept: spend in micros of the currency (limits/money.ts). */
export interface UsageCounts {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  spendMicros: number;
}

/** The cluster's (or this replica's) counts for one month. */
export interface UsageTotals {
  accounts: Record<string, UsageCounts>;
  keys: Record<string, UsageCounts & { account: string }>;
  models: Record<string, UsageCounts>;
}

export interface UsageReport {
  replica: string;
  scope: 'replica' | 'cluster';
  month: string;
  currency: string;
  accounts: Record<string, AccountUsage>;
  keys: Record<string, KeyUsage>;
  models: Record<string, AccountUsage>;
}

/** One finished request, as counted. */
export interface UsageEntry {
  account: string;
  /** The ApiKey's name. */
  key?: string | null;
  /** The Model's name (a name the snapshot knows, or service-test); null when it named none. */
  model?: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  /** Micros; null or 0 when not priced. */
  cost?: number | null;
}

/**
 * The seam for a shared store: the whole cluster's usage for a month (e.g. from Redis). When the
 * gateway has one, `/usage` answers with it, scope `cluster`.
 */
export type ClusterUsage = (month: string) => Promise<UsageTotals>;

export function emptyCounts(): UsageCounts {
  return { inputTokens: 0, outputTokens: 0, requests: 0, spendMicros: 0 };
}

/** Adds one request to `counts`. */
export function addTo(counts: UsageCounts, usage: UsageEntry['usage'], cost: number | null | undefined): void {
  counts.requests += 1;
  if (usage) {
    counts.inputTokens += usage.inputTokens;
    counts.outputTokens += usage.outputTokens;
  }
  if (cost) counts.spendMicros += cost;
}

function shown({ inputTokens, outputTokens, requests, spendMicros }: UsageCounts): AccountUsage {
  return { inputTokens, outputTokens, requests, spend: formatMoney(spendMicros) };
}

/** The report's shape of a month's totals. */
export function reportOf(replica: string, scope: UsageReport['scope'], month: string, currency: string, totals: UsageTotals): UsageReport {
  const map = <T extends UsageCounts, R>(record: Record<string, T>, f: (value: T) => R) => Object.fromEntries(Object.entries(record).map(([name, value]) => [name, f(value)]));
  return {
    replica,
    scope,
    month,
    currency,
    accounts: map(totals.accounts, shown),
    keys: map(totals.keys, (value) => ({ account: value.account, ...shown(value) })),
    models: map(totals.models, shown),
  };
}

export class UsageLedger {
  readonly #clock: () => number;
  readonly #replica: string;
  readonly #currency: string;
  #month = '';
  /** The current month's end (ms since the epoch): the month's name is worked out once per month. */
  #monthEnd = 0;
  #totals: UsageTotals = { accounts: {}, keys: {}, models: {} };

  constructor(clock: () => number, replica = process.env.POD_NAME || process.env.HOSTNAME || hostname(), currency = 'USD') {
    this.#clock = clock;
    this.#replica = replica;
    this.#currency = currency;
  }

  /** Counts one answered request (tokens as reported by the upstream or service-test, its cost). */
  record(entry: UsageEntry): void {
    this.#roll();
    const { accounts, keys, models } = this.#totals;
    addTo((accounts[entry.account] ??= emptyCounts()), entry.usage, entry.cost);
    if (entry.key) addTo((keys[entry.key] ??= { account: entry.account, ...emptyCounts() }), entry.usage, entry.cost);
    if (entry.model) addTo((models[entry.model] ??= emptyCounts()), entry.usage, entry.cost);
  }

  /** This replica's counts this month per account. */
  accountCounts(): Array<[string, UsageCounts]> {
    this.#roll();
    return Object.entries(this.#totals.accounts);
  }

  async report(cluster?: ClusterUsage): Promise<UsageReport> {
    this.#roll();
    if (cluster) return reportOf(this.#replica, 'cluster', this.#month, this.#currency, await cluster(this.#month));
    return reportOf(this.#replica, 'replica', this.#month, this.#currency, this.#totals);
  }

  /** A new month starts from nothing. */
  #roll(): void {
    const now = this.#clock();
    if (now < this.#monthEnd && this.#month !== '') return;
    const date = new Date(now);
    const month = date.toISOString().slice(0, 7);
    this.#monthEnd = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
    if (month === this.#month) return;
    this.#month = month;
    this.#totals = { accounts: {}, keys: {}, models: {} };
  }
}
