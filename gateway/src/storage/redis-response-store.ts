// Stored responses (previous_response_id, GET/DELETE /v1/responses/:id) in the shared store, so any
// replica answers for any other. Same contract as the in-memory ResponseStore: an entry belongs to
// an account (another account's id behaves as unknown), lives for a fixed time after it was stored,
// and one larger than the per-entry bound is not stored at all. Memory overall is bounded by Redis's
// own maxmemory policy (docs/limits.md), since every key here expires.
import { ApiError } from '../http/errors.ts';
import type { SharedRedis } from './redis-client.ts';
import type { FileResponseStore } from './file-response-store.ts';
import { DEFAULT_TTL_MS, type ResponseStore } from './response-store.ts';

/** Stored responses in this process's memory, its data directory, or Redis (shared mode): callers await any. */
export type ResponseKeeper<T> = ResponseStore<T> | FileResponseStore<T> | RedisResponseStore<T>;

/** Largest entry kept: far above a normal conversation, far below what would strain Redis. */
export const DEFAULT_MAX_ENTRY_BYTES = 4 * 1024 * 1024;

export class RedisResponseStore<T> {
  readonly ttlMs: number;
  readonly maxEntryBytes: number;
  readonly #redis: SharedRedis;

  /** The key's kind: `response` for stored responses, `item` for their items (item_reference). */
  readonly #kind: string;

  constructor(redis: SharedRedis, options: { ttlMs?: number; maxEntryBytes?: number; kind?: string } = {}) {
    this.#redis = redis;
    this.#kind = options.kind ?? 'response';
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    this.maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
  }

  /** Stores `value` for `account`; false when it is too large or Redis is away (the caller logs it). */
  async put(account: string, id: string, value: T, bytes: number): Promise<boolean> {
    if (bytes > this.maxEntryBytes) return false;
    const text = JSON.stringify({ a: account, v: value });
    if (Buffer.byteLength(text) > this.maxEntryBytes) return false;
    try {
      await this.#redis.run((client) => client.set(this.#key(id), text, 'PX', this.ttlMs));
      return true;
    } catch {
      return false;
    }
  }

  async get(account: string, id: string): Promise<T | undefined> {
    const text = await this.#read(id);
    if (!text) return undefined;
    const entry = JSON.parse(text) as { a: string; v: T };
    return entry.a === account ? entry.v : undefined;
  }

  async delete(account: string, id: string): Promise<boolean> {
    if ((await this.get(account, id)) === undefined) return false;
    await this.#redis.run((client) => client.del(this.#key(id)));
    return true;
  }

  close(): void {}

  #key(id: string): string {
    return this.#redis.key(this.#kind, id);
  }

  async #read(id: string): Promise<string | null> {
    try {
      return await this.#redis.run((client) => client.get(this.#key(id)));
    } catch {
      throw new ApiError(503, 'store_unavailable', 'Stored responses cannot be read right now (the shared store is unreachable). Retry shortly.', {
        headers: { 'Retry-After': '1', 'retry-after-ms': '1000' },
      });
    }
  }
}
