// Routed upstream ids (files, batches, threads, assistants, vector stores) in the shared store, so
// that an id one replica saw issued resolves on every replica and survives any of them. One key per
// (account, id) holding "<upstream>|<kind>", expiring 35 days after it was last written: longer than
// an upstream keeps a batch's output file (30 days), so Redis holds no more than the upstreams do.
import { ApiError } from '../http/errors.ts';
import type { SharedRedis } from './redis-client.ts';
import type { RoutedId, RoutedKind } from './routed-ids.ts';

const KEEP_MS = 35 * 24 * 3600 * 1000;

export class RedisRoutedIds {
  readonly #redis: SharedRedis;

  constructor(redis: SharedRedis) {
    this.#redis = redis;
  }

  async lookup(account: string, id: string): Promise<RoutedId | undefined> {
    const value = await this.#run(() => this.#redis.run((client) => client.get(this.#key(account, id))));
    if (!value) return undefined;
    const cut = value.lastIndexOf('|');
    return { upstream: value.slice(0, cut), kind: value.slice(cut + 1) as RoutedKind };
  }

  async remember(account: string, id: string, route: RoutedId): Promise<void> {
    await this.#redis.run((client) => client.set(this.#key(account, id), `${route.upstream}|${route.kind}`, 'PX', KEEP_MS));
  }

  async forget(account: string, id: string): Promise<void> {
    await this.#redis.run((client) => client.del(this.#key(account, id)));
  }

  /** Nothing is buffered: every write went to Redis when it was made. */
  async flush(): Promise<void> {}

  #key(account: string, id: string): string {
    return this.#redis.key('route', account, id);
  }

  async #run<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch {
      // Without the shared store the gateway cannot tell which upstream owns the id: say so, don't 404.
      throw new ApiError(503, 'store_unavailable', 'The gateway cannot look up this id right now (its shared store is unreachable). Retry shortly.', {
        headers: { 'Retry-After': '1', 'retry-after-ms': '1000' },
      });
    }
  }
}
