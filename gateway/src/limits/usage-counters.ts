// Usage per Account and month (input tokens, output tokens, requests), counted once for the whole
// cluster in Redis, so `GET /usage` can answer with scope "cluster" and the operator takes one answer
// instead of summing replicas. One hash per month; each finished request adds to it in one script
// call, marked by the request's id so a retry after a lost reply does not count it twice. While Redis
// is away, counts are kept in memory (bounded) and added once it is back.
import type { Logger } from 'pino';
import { MARKER_MS, type SharedRedis } from '../storage/redis-client.ts';
import { RedisRetryQueue } from '../storage/redis-retry-queue.ts';
import type { AccountUsage, UsageReport } from '../telemetry/usage-ledger.ts';
import { USAGE_ADD } from './redis-scripts.ts';

interface PendingUsage {
  id: string;
  account: string;
  month: string;
  inputTokens: number;
  outputTokens: number;
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
  async record(account: string, month: string, inputTokens: number, outputTokens: number): Promise<void> {
    await this.#queue.submit({ id: `${this.#redis.replicaId}:${(this.#sequence++).toString(36)}`, account, month, inputTokens, outputTokens });
  }

  /** Counts still waiting for Redis. */
  get pending(): number {
    return this.#queue.size;
  }

  /** Re-sends kept counts now (reconnection, shutdown). */
  flushPending(): Promise<void> {
    return this.#queue.flush();
  }

  /** Every account's usage in `month` ("YYYY-MM"), for the whole cluster. */
  async month(month: string): Promise<Record<string, AccountUsage>> {
    const fields = await this.#redis.run((client) => client.hgetall(this.#redis.key(USAGE_TAG, month)));
    const accounts: Record<string, AccountUsage> = {};
    for (const [field, value] of Object.entries(fields)) {
      const cut = field.lastIndexOf('|');
      const name = field.slice(0, cut);
      const usage = (accounts[name] ??= { inputTokens: 0, outputTokens: 0, requests: 0 });
      const n = Number(value);
      const kind = field.slice(cut + 1);
      if (kind === 'i') usage.inputTokens = n;
      else if (kind === 'o') usage.outputTokens = n;
      else if (kind === 'r') usage.requests = n;
    }
    return accounts;
  }

  /** The `GET /usage` answer in Redis mode. Throws RedisUnavailableError while Redis is away (the caller answers 503). */
  async report(replica: string, month: string): Promise<UsageReport> {
    return { replica, scope: 'cluster', month, accounts: await this.month(month) };
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
      ),
    );
  }
}
