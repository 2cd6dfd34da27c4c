// Shared mode in one place: when TOLLGATE_REDIS_URL is set, server.ts builds these and uses them in
// place of the per-process stores. The gateway starts (and /readyz says ready) whether or not Redis
// answers yet: limits then follow the failure policy until it does.
import type { Logger } from 'pino';
import { FailSafeLimitStore } from '../limits/fail-safe-store.ts';
import type { LimitStore } from '../limits/limit-store.ts';
import { RedisLimitStore } from '../limits/redis-limit-store.ts';
import { RedisUsageCounters } from '../limits/usage-counters.ts';
import type { UsageReport } from '../telemetry/usage-ledger.ts';
import { SharedRedis, type RedisHealth } from './redis-client.ts';
import type { RedisConfig } from './redis-config.ts';
import { RedisFileStore } from './redis-files.ts';
import { RedisImageStore } from './redis-image-store.ts';
import { RedisResponseStore } from './redis-response-store.ts';
import { RedisRoutedIds } from './redis-routed-ids.ts';

export interface SharedStores {
  redis: SharedRedis;
  /** The limit store requests go through: Redis, answered by the failure policy while Redis is away. */
  limitStore: LimitStore;
  redisLimits: RedisLimitStore;
  usage: RedisUsageCounters;
  routedIds: RedisRoutedIds;
  images: RedisImageStore;
  /** service-test's uploaded files, bounded per account. */
  files: RedisFileStore;
  responses<T>(): RedisResponseStore<T>;
  /** The items of stored responses, by item id (what an item_reference names), beside them. */
  items<T>(): RedisResponseStore<T>;
  /** Whether the shared store is degraded, for /metrics (a gauge) and tests. */
  health(): RedisHealth;
  /** Limit-store calls answered by the failure policy instead of Redis so far (a metric). */
  limitFallbacks(): number;
  /** `GET /usage` in shared mode: the cluster's totals for the month. */
  usageReport(replica: string, month: string): Promise<UsageReport>;
  close(): Promise<void>;
}

export function createSharedStores(config: RedisConfig, log: Logger): SharedStores {
  const redis = new SharedRedis({ url: config.url, sentinelUsername: config.sentinelUsername, sentinelPassword: config.sentinelPassword, prefix: config.prefix, commandTimeoutMs: config.commandTimeoutMs, log });
  const redisLimits = new RedisLimitStore(redis, { log, leaseMs: config.leaseMs });
  const usage = new RedisUsageCounters(redis, log);
  const limitStore = new FailSafeLimitStore(redisLimits, { rateLimits: config.rateLimits, budgets: config.budgets }, log);
  return {
    redis,
    limitStore,
    redisLimits,
    usage,
    routedIds: new RedisRoutedIds(redis),
    images: new RedisImageStore(redis),
    files: new RedisFileStore(redis, config.files),
    responses: <T>() => new RedisResponseStore<T>(redis),
    items: <T>() => new RedisResponseStore<T>(redis, { kind: 'item' }),
    health: () => redis.health,
    limitFallbacks: () => limitStore.fallbacks,
    usageReport: (replica, month) => usage.report(replica, month),
    async close() {
      redisLimits.close();
      // Settlements and usage still waiting get one last chance before the connection closes.
      await redisLimits.flushPending().catch(() => {});
      await usage.flushPending().catch(() => {});
      await redis.close();
    },
  };
}
