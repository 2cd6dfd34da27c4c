// This replica's usage per account for the current month, for the operator's `GET /usage` on the
// metrics port. In memory and per process by design: the operator sums every ready replica's answer
// (scope `replica`); with a shared store the cluster-wide total comes from there instead (scope
// `cluster`, see ClusterUsage). Bounded by the accounts in the snapshot: only authenticated requests count.
import { hostname } from 'node:os';

export interface AccountUsage {
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

export interface UsageReport {
  replica: string;
  scope: 'replica' | 'cluster';
  month: string;
  accounts: Record<string, AccountUsage>;
}

/**
 * The seam for a shared store: the whole cluster's usage per account for a month (e.g. from Redis).
 * When the gateway has one, `/usage` answers with it, scope `cluster`.
 */
export type ClusterUsage = (month: string) => Promise<Record<string, AccountUsage>>;

export class UsageLedger {
  readonly #clock: () => number;
  readonly #replica: string;
  #month = '';
  /** The current month's end (ms since the epoch): the month's name is worked out once per month. */
  #monthEnd = 0;
  #accounts = new Map<string, AccountUsage>();

  constructor(clock: () => number, replica = process.env.POD_NAME || process.env.HOSTNAME || hostname()) {
    this.#clock = clock;
    this.#replica = replica;
  }

  /** Counts one answered request of an account (tokens as reported by the upstream or service-test). */
  record(account: string, usage: { inputTokens: number; outputTokens: number } | null): void {
    this.#roll();
    let entry = this.#accounts.get(account);
    if (!entry) {
      entry = { inputTokens: 0, outputTokens: 0, requests: 0 };
      this.#accounts.set(account, entry);
    }
    entry.requests += 1;
    if (usage) {
      entry.inputTokens += usage.inputTokens;
      entry.outputTokens += usage.outputTokens;
    }
  }

  async report(cluster?: ClusterUsage): Promise<UsageReport> {
    this.#roll();
    if (cluster) return { replica: this.#replica, scope: 'cluster', month: this.#month, accounts: await cluster(this.#month) };
    return { replica: this.#replica, scope: 'replica', month: this.#month, accounts: Object.fromEntries(this.#accounts) };
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
    this.#accounts = new Map();
  }
}
