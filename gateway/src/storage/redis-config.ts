// Shared-store settings from the environment. Without TOLLGATE_REDIS_URL there is no shared store
// and every replica keeps its own state (the single-process mode of docs/limits.md).
import type { FailureMode } from '../limits/fail-safe-store.ts';
import { DEFAULT_FILE_BOUNDS, type RedisFileBounds } from './redis-files.ts';
import { parseRedisUrl } from './redis-url.ts';

export interface RedisConfig {
  /** redis://, rediss://, redis+sentinel:// or redis+cluster:// (redis-url.ts). Never logged. */
  url: string;
  /** AUTH for sentinels that require their own (TOLLGATE_REDIS_SENTINEL_USERNAME / _PASSWORD). */
  sentinelUsername?: string;
  sentinelPassword?: string;
  /** Prefix of every key (the keys carry their own hash tags for Redis Cluster). */
  prefix: string;
  /** Longest a command may take before the request goes on without it. */
  commandTimeoutMs: number;
  /** Lifetime of a concurrency slot or budget reservation that its replica stops renewing. */
  leaseMs: number;
  /** What per-minute and concurrency limits do while Redis is unreachable. */
  rateLimits: FailureMode;
  /** What monthly budgets do while Redis is unreachable. */
  budgets: FailureMode;
  /** What service-test's uploaded files may take in Redis, per account (default DEFAULT_FILE_BOUNDS). */
  files?: RedisFileBounds;
}

export function redisConfigFromEnv(env: NodeJS.ProcessEnv): RedisConfig | null {
  const url = env.TOLLGATE_REDIS_URL;
  if (!url) return null;
  // Refused at start-up, not at the first command: a typo must not look like an outage.
  parseRedisUrl(url);
  return {
    url,
    ...(env.TOLLGATE_REDIS_SENTINEL_USERNAME ? { sentinelUsername: env.TOLLGATE_REDIS_SENTINEL_USERNAME } : {}),
    ...(env.TOLLGATE_REDIS_SENTINEL_PASSWORD ? { sentinelPassword: env.TOLLGATE_REDIS_SENTINEL_PASSWORD } : {}),
    prefix: env.TOLLGATE_REDIS_PREFIX ?? 'tollgate:',
    commandTimeoutMs: positive(env, 'TOLLGATE_REDIS_TIMEOUT_MS', 500),
    leaseMs: positive(env, 'TOLLGATE_REDIS_LEASE_MS', 15_000),
    rateLimits: mode(env, 'TOLLGATE_REDIS_RATE_LIMITS', 'open'),
    budgets: mode(env, 'TOLLGATE_REDIS_BUDGETS', 'closed'),
    files: {
      maxBytes: count(env, 'TOLLGATE_REDIS_FILES_MAX_BYTES', DEFAULT_FILE_BOUNDS.maxBytes),
      maxCount: count(env, 'TOLLGATE_REDIS_FILES_MAX_COUNT', DEFAULT_FILE_BOUNDS.maxCount),
    },
  };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number of milliseconds, not ${JSON.stringify(raw)}`);
  return value;
}

function count(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
  return Number(raw);
}

function mode(env: NodeJS.ProcessEnv, name: string, fallback: FailureMode): FailureMode {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'open' || raw === 'closed') return raw;
  throw new Error(`${name} must be open or closed, not ${JSON.stringify(raw)}`);
}
