// The one connection to the shared store (Redis or Valkey), for limits, budgets, usage and routed
// state when several replicas must agree. The gateway must keep serving while Redis is away, so no
// request ever waits on it for long: commands fail fast when the connection is down (no offline
// queue), every command has a tight timeout, and a circuit breaker stops even trying for a short
// cool-down after repeated failures. Reconnects run in the background with capped, jittered backoff.
// Whether the store is degraded is readable state (for a metric) and every change is one log line.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { parseRedisUrl } from './redis-url.ts';

export interface SharedRedisOptions {
  /** redis://, rediss:// (TLS), redis+sentinel:// or redis+cluster:// (redis-url.ts); user and password in it for AUTH/ACL. */
  url: string;
  /** AUTH for sentinels that require their own (Sentinel mode only). */
  sentinelUsername?: string;
  sentinelPassword?: string;
  log: Logger;
  /** Key prefix for everything Tollgate stores. */
  prefix?: string;
  /** Longest a command may take before it counts as failed. */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Consecutive failures that open the breaker, and how long it then stays open. */
  breakerThreshold?: number;
  breakerCooldownMs?: number;
}

export interface RedisHealth {
  degraded: boolean;
  /** Why, while degraded: the last error's message (never a URL or password). */
  reason: string | null;
  /** Since when (ms since the epoch), while degraded. */
  since: number | null;
}

export class RedisUnavailableError extends Error {
  /** True when the command may have reached Redis (a timeout, a dropped connection): its effect is unknown. */
  readonly sent: boolean;

  constructor(message: string, sent = false) {
    super(message);
    this.name = 'RedisUnavailableError';
    this.sent = sent;
  }
}

/** How long a write's idempotency marker lives: a write whose reply was lost must be retried within it. */
export const MARKER_MS = 5 * 60 * 1000;


export const DEFAULT_COMMAND_TIMEOUT_MS = 500;

export class SharedRedis {
  readonly client: Redis;
  readonly prefix: string;
  /** Identifies this process in lease and reservation ids. */
  readonly replicaId: string;
  readonly #log: Logger;
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #timeoutMs: number;
  #failures = 0;
  #openUntil = 0;
  #health: RedisHealth = { degraded: false, reason: null, since: null };
  #listeners: Array<(health: RedisHealth) => void> = [];
  #closed = false;

  constructor(options: SharedRedisOptions) {
    this.#log = options.log;
    this.prefix = options.prefix ?? 'tollgate:';
    this.#threshold = options.breakerThreshold ?? 3;
    this.#cooldownMs = options.breakerCooldownMs ?? 1000;
    this.replicaId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.#timeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    const retryStrategy = (times: number) => Math.min(2000, 50 * 2 ** Math.min(times, 6)) * (0.75 + Math.random() / 2);
    const redisOptions: RedisOptions = {
      // A backstop only: run() applies the real timeout, one that our own event loop lag cannot trip.
      commandTimeout: this.#timeoutMs * 10,
      connectTimeout: options.connectTimeoutMs ?? 1000,
      // Fail at once while disconnected instead of queueing: a request must not wait for a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Never give up reconnecting; back off from 50 ms to 2 s, with jitter so replicas spread out.
      retryStrategy,
      // After a failover the old primary turns read-only: reconnect to reach the new one.
      reconnectOnError: (error) => error.message.startsWith('READONLY'),
      // Calls made in the same tick (a request's settlement: release, adjust, settle) share one write.
      enableAutoPipelining: true,
      lazyConnect: true,
      connectionName: 'tollgate-gateway',
    };
    const target = parseRedisUrl(options.url);
    const auth = { ...(target.username ? { username: target.username } : {}), ...(target.password !== undefined ? { password: target.password } : {}) };
    const tls = target.tls ? { tls: {} } : {};
    if (target.mode === 'cluster') {
      const { retryStrategy: _perNode, enableOfflineQueue: _queue, ...nodeOptions } = redisOptions;
      // Cluster offers the same commands, events and script definitions as a single connection.
      this.client = new Cluster(target.nodes, {
        redisOptions: { ...nodeOptions, ...auth, ...tls },
        clusterRetryStrategy: retryStrategy,
        enableOfflineQueue: false,
        // Off on a cluster: ioredis groups a tick's calls by the slot of their first argument, which
        // for a script with a variable number of keys is the key count, not a key; the pipeline then
        // mixes slots and is refused. Each call is its own write instead (replies still overlap).
        enableAutoPipelining: false,
        lazyConnect: true,
        slotsRefreshTimeout: options.connectTimeoutMs ?? 1000,
        // A primary that fails over moves its slots: follow the redirections a few times, quickly.
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
      }) as unknown as Redis;
    } else if (target.mode === 'sentinel') {
      this.client = new Redis({
        ...redisOptions,
        ...auth,
        ...tls,
        sentinels: target.sentinels,
        name: target.name,
        db: target.db,
        ...(options.sentinelUsername ? { sentinelUsername: options.sentinelUsername } : {}),
        ...(options.sentinelPassword ? { sentinelPassword: options.sentinelPassword } : {}),
        ...(target.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
        sentinelRetryStrategy: retryStrategy,
        // Learn of a failover from the sentinels' announcement instead of a failed command.
        failoverDetector: true,
      });
    } else {
      this.client = new Redis(options.url, redisOptions);
    }
    this.client.on('error', (error: Error) => this.#degrade(error.message));
    this.client.on('ready', () => this.#recover());
    this.client.on('close', () => {
      if (!this.#closed) this.#degrade('connection closed');
    });
    // The first connection is attempted in the background; until it is up, calls fail fast.
    this.client.connect().catch(() => {});
  }

  get health(): RedisHealth {
    return this.#health;
  }

  get degraded(): boolean {
    return this.#health.degraded;
  }

  /** Called on every change of health (a metric gauge, a test). */
  onHealthChange(listener: (health: RedisHealth) => void): void {
    this.#listeners.push(listener);
  }

  /** Prefixed key. */
  key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /**
   * Runs one call against Redis through the breaker. Rejects with RedisUnavailableError at once
   * while the breaker is open or the connection is down, and after the command timeout otherwise.
   */
  async run<T>(call: (client: Redis) => Promise<T>): Promise<T> {
    if (this.#closed) throw new RedisUnavailableError('the shared store is closed');
    if (Date.now() < this.#openUntil) throw new RedisUnavailableError(`the shared store is unavailable (${this.#health.reason ?? 'breaker open'})`);
    // A connection being made (start-up, or a reconnect attempt under way) is worth a short wait.
    if (this.client.status === 'connecting' || this.client.status === 'connect') await this.waitReady(this.#timeoutMs).catch(() => {});
    if (this.client.status !== 'ready') {
      this.#fail(`not connected (${this.client.status})`);
      throw new RedisUnavailableError(`the shared store is not connected (${this.client.status})`);
    }
    try {
      const result = await withTimeout(call(this.client), this.#timeoutMs);
      this.#failures = 0;
      if (this.#health.degraded) this.#recover();
      return result;
    } catch (error) {
      const message = (error as Error).message;
      // A script error is a bug, not an outage: it must not open the breaker for everyone.
      if ((error as Error).name === 'ReplyError' && !/^(LOADING|BUSY|READONLY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)/.test(message)) throw error;
      this.#fail(message);
      throw new RedisUnavailableError(`the shared store failed: ${message}`, true);
    }
  }

  /** Resolves once connected, or rejects after `timeoutMs` (start-up and tests). */
  async waitReady(timeoutMs = 5000): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new RedisUnavailableError(`the shared store did not become ready within ${timeoutMs} ms`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.client.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  #fail(reason: string): void {
    this.#failures++;
    if (this.#failures >= this.#threshold) {
      this.#openUntil = Date.now() + this.#cooldownMs;
      // Half-open after the cool-down: the first failure then opens it again.
      this.#failures = this.#threshold - 1;
    }
    this.#degrade(reason);
  }

  #degrade(reason: string): void {
    if (this.#closed || this.#health.degraded) return;
    this.#health = { degraded: true, reason, since: Date.now() };
    // The reason comes from the client's error, which names host and port but never the password.
    this.#log.warn({ sharedStore: 'redis', reason }, 'shared store degraded: limits fall back to their configured failure mode');
    for (const listener of this.#listeners) listener(this.#health);
  }

  #recover(): void {
    this.#failures = 0;
    this.#openUntil = 0;
    if (!this.#health.degraded) return;
    const since = this.#health.since ?? Date.now();
    this.#health = { degraded: false, reason: null, since: null };
    this.#log.info({ sharedStore: 'redis', degradedMs: Date.now() - since }, 'shared store recovered');
    for (const listener of this.#listeners) listener(this.#health);
  }
}

/**
 * Rejects when `promise` has not settled within `ms`. When the timer fires, the decision waits for
 * one turn of the event loop (setImmediate runs after the poll phase): a reply already sitting in the
 * socket, delayed only by this process being busy (a long synchronous task), still wins. Otherwise a
 * busy gateway would blame Redis for its own lag and open the breaker.
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return;
        settled = true;
        reject(new Error('Command timed out'));
      });
    }, ms);
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
