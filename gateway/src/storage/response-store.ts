// Stored responses for `previous_response_id` and GET/DELETE /v1/responses/:id, held in memory (and
// written to the data directory by storage/file-response-store.ts, so a restart keeps them). A stored
// response is a convenience for clients that do not keep their own history, not a durable record,
// so the store is bounded three ways (entry count, approximate bytes, age) and
// evicts the least recently used entry first. Entries belong to an account; another account's id
// behaves exactly like an unknown one, so ids cannot be probed across accounts.

export interface ResponseStoreOptions {
  /** Most entries kept at once. */
  maxEntries?: number;
  /** Most approximate bytes kept at once (as estimated by the caller of put). */
  maxBytes?: number;
  /** How long an entry lives after it was stored, whether or not it is read. */
  ttlMs?: number;
  /** How often expired entries are swept; reads also check expiry, so this only frees memory. */
  sweepIntervalMs?: number;
}

interface Entry<T> {
  account: string;
  value: T;
  bytes: number;
  expiresAt: number;
}

export const DEFAULT_MAX_ENTRIES = 10_000;
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;
export const DEFAULT_TTL_MS = 60 * 60 * 1000;

export class ResponseStore<T> {
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly ttlMs: number;
  // A Map iterates in insertion order; re-inserting on every read makes its first key the least
  // recently used one, which is all an LRU needs.
  #entries = new Map<string, Entry<T>>();
  #bytes = 0;
  #sweeper: ReturnType<typeof setInterval> | null;

  constructor(options: ResponseStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    const sweepEvery = options.sweepIntervalMs ?? Math.min(this.ttlMs, 60_000);
    this.#sweeper = setInterval(() => this.sweep(), sweepEvery);
    // The sweeper must never keep a process alive on its own.
    this.#sweeper.unref();
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Stores `value` under `id` for `account`. An entry larger than the whole byte budget is not
   * stored at all (false): keeping it would mean evicting everything else for one response.
   */
  put(account: string, id: string, value: T, bytes: number, expiresAt = Date.now() + this.ttlMs): boolean {
    this.#remove(id);
    if (bytes > this.maxBytes) return false;
    this.#entries.set(id, { account, value, bytes, expiresAt });
    this.#bytes += bytes;
    this.#evictOverflow();
    return true;
  }

  /** The value, if it exists, belongs to `account` and has not expired; marks it recently used. */
  get(account: string, id: string): T | undefined {
    const entry = this.#live(account, id);
    if (!entry) return undefined;
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    return entry.value;
  }

  /** True when an entry of `account` was removed. */
  delete(account: string, id: string): boolean {
    if (!this.#live(account, id)) return false;
    this.#remove(id);
    return true;
  }

  /** Every live entry, least recently used first (what a file of the store is rewritten from). */
  *entries(): Generator<{ id: string; account: string; value: T; bytes: number; expiresAt: number }> {
    const now = Date.now();
    for (const [id, entry] of this.#entries) if (entry.expiresAt > now) yield { id, ...entry };
  }

  /** Drops every expired entry. */
  sweep(): void {
    const now = Date.now();
    for (const [id, entry] of this.#entries) if (entry.expiresAt <= now) this.#remove(id);
  }

  close(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
    this.#entries.clear();
    this.#bytes = 0;
  }

  #live(account: string, id: string): Entry<T> | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#remove(id);
      return undefined;
    }
    return entry.account === account ? entry : undefined;
  }

  #remove(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    this.#bytes -= entry.bytes;
  }

  #evictOverflow(): void {
    for (const id of this.#entries.keys()) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) return;
      this.#remove(id);
    }
  }
}
