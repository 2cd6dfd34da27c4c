// Usage per Account, ApiKey and Model and month (input tokens, output tokens, requests, spend), counted once for the whole
// cluster in Redis, so `GET /usage` can answer with scope "cluster" and the operator takes one answer
// instead of summing replicas. One hash per month; each finished request adds to it in one script
// call, marked by the request's id so a retry after a lost reply does not count it twice. While Redis
// is away, counts are kept in memory (bounded) and added once it is back.
import type { Logger } from 'pino';
import { MARKER_MS, type SharedRedis } from '../storage/redis-client.ts';
import { RedisRetryQueue } from '../storage/redis-retry-queue.ts';
import { emptyCounts, reportOf, type UsageCounts, type UsageReport, type UsageTotals } from '../telemetry/usage-ledger.ts';
import { USAGE_ADD } from './redis-scripts.ts';

interface PendingUsage {
  id: string;
  account: string;
  month: string;
  inputTokens: number;
  outputTokens: number;
  spend: number;
  key: string;
  model: string;
}

/** What a finished request adds: its tokens, its cost (micros), its key's and model's names. */
export interface UsageAdd {
  inputTokens: number;
  outputTokens: number;
  spend?: number;
  key?: string | null;
  model?: string | null;
}

/** The hash tag of the usage hashes and their markers: one script's keys share a Redis Cluster slot. */
const USAGE_TAG = '{usage}';

/** Months are kept a year: the operator reads the current one, people may ask about the last few. */
const KEEP_MS = 400 * 24 * 3600 * 1000;

export class RedisUsageCounters {
  readonly #redis: SharedRedis;
  readonly #queue: RedisRetryQueue<PendingUsage>;
  #sequence = 0;

  constructor(redis: SharedRedis, log: Logger) {
    this.#redis = redis;
    redis.client.defineCommand('tollgateUsageAdd', { lua: USAGE_ADD, numberOfKeys: 2 });
    this.#queue = new RedisRetryQueue('usage count', (entry) => this.#add(entry), log);
    redis.onHealthChange((health) => {
      if (!health.degraded) void this.#queue.flush();
    });
  }

  /** Counts one finished request of `account`; never throws. */
  async record(account: string, month: string, add: UsageAdd): Promise<void> {
    await this.#queue.submit({
      id: `${this.#redis.replicaId}:${(this.#sequence++).toString(36)}`,
      account,
      month,
      inputTokens: add.inputTokens,
      outputTokens: add.outputTokens,
      spend: add.spend ?? 0,
      key: add.key ?? '',
      model: add.model ?? '',
    });
  }

  /** Counts still waiting for Redis. */
  get pending(): number {
    return this.#queue.size;
  }

  /** Re-sends kept counts now (reconnection, shutdown). */
  flushPending(): Promise<void> {
    return this.#queue.flush();
  }

  /** Every account's, key's and model's usage in `month` ("YYYY-MM"), for the whole cluster. */
  async month(month: string): Promise<UsageTotals> {
    const fields = await this.#redis.run((client) => client.hgetall(this.#redis.key(USAGE_TAG, month)));
    const totals: UsageTotals = { accounts: {}, keys: {}, models: {} };
    for (const [field, value] of Object.entries(fields)) {
      const cut = field.lastIndexOf('|');
      const name = field.slice(0, cut);
      const kind = field.slice(cut + 1);
      let counts: UsageCounts;
      if (name.startsWith('k/')) {
        const key = (totals.keys[name.slice(2)] ??= { account: '', ...emptyCounts() });
        if (kind === 'a') {
          key.account = value;
          continue;
        }
        counts = key;
      } else if (name.startsWith('m/')) counts = totals.models[name.slice(2)] ??= emptyCounts();
      else counts = totals.accounts[name] ??= emptyCounts();
      const n = Number(value);
      if (kind === 'i') counts.inputTokens = n;
      else if (kind === 'o') counts.outputTokens = n;
      else if (kind === 'r') counts.requests = n;
      else if (kind === 's') counts.spendMicros = n;
    }
    return totals;
  }

  /** The `GET /usage` answer in Redis mode. Throws RedisUnavailableError while Redis is away (the caller answers 503). */
  async report(replica: string, month: string, currency = 'USD'): Promise<UsageReport> {
    return reportOf(replica, 'cluster', month, currency, await this.month(month));
  }

  #add(entry: PendingUsage): Promise<unknown> {
    return this.#redis.run((client) =>
      (client as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>).tollgateUsageAdd(
        this.#redis.key(USAGE_TAG, entry.month),
        this.#redis.key(USAGE_TAG, 'counted', entry.id),
        entry.account,
        entry.inputTokens,
        entry.outputTokens,
        KEEP_MS,
        MARKER_MS,
        entry.spend,
        entry.key,
        entry.model,
      ),
    );
  }
}
