// Stored responses (and their items) that survive a restart in standalone mode: the in-memory
// ResponseStore, mirrored by an append-only log of JSON lines in the data directory (a line per put,
// with its expiry, and per delete), replayed at start-up and rewritten compactly when it has grown
// mostly stale — as the routed ids are kept (storage/routed-ids.ts). Replaying every put through the
// memory store applies its bounds again, so what comes back is what was live, within the same
// limits; expired entries are dropped. A put resolves once its line is written, so a response a
// client has been answered with is on disk; at shutdown pending writes are awaited.
import { mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { ResponseStore, type ResponseStoreOptions } from './response-store.ts';

/** Stale text tolerated beyond twice the live entries before the file is rewritten. */
const COMPACT_SLACK_CHARS = 16 * 1024 * 1024;

type LogLine<T> = { a: string; i: string; e: number; b: number; v: T } | { a: string; i: string; d: 1 };

export class FileResponseStore<T> {
  readonly file: string;
  readonly #memory: ResponseStore<T>;
  readonly #log: Pick<Logger, 'error' | 'warn'>;
  #lines = 0;
  /** Characters in the file: with the line count, what decides that it has grown mostly stale. */
  #chars = 0;
  /** Characters the last rewrite left (the live entries then): growth is measured against it. */
  #compactedChars = 0;
  /** The last write, settled either way: the next one waits for it, never for its success. */
  #writes: Promise<void> = Promise.resolve();
  #ready: Promise<void>;
  /** The log, open for appending once the first line is written. */
  #handle: FileHandle | null = null;
  #closed = false;

  readonly #slack: number;

  /** `file`: the log's path in the data directory. */
  constructor(file: string, log: Pick<Logger, 'error' | 'warn'>, options: ResponseStoreOptions & { compactSlackChars?: number } = {}) {
    this.file = file;
    this.#log = log;
    this.#slack = options.compactSlackChars ?? COMPACT_SLACK_CHARS;
    this.#memory = new ResponseStore<T>(options);
    this.#ready = this.#load();
    // A failed load is reported by the first request that awaits it, not as an unhandled rejection.
    this.#ready.catch(() => {});
  }

  /** Keeps `value`; false when it is larger than the whole store (nothing is written then). */
  async put(account: string, id: string, value: T, bytes: number): Promise<boolean> {
    await this.#ready;
    const expiresAt = Date.now() + this.#memory.ttlMs;
    if (!this.#memory.put(account, id, value, bytes, expiresAt)) return false;
    await this.#append(JSON.stringify({ a: account, i: id, e: expiresAt, b: bytes, v: value }));
    return true;
  }

  async get(account: string, id: string): Promise<T | undefined> {
    await this.#ready;
    return this.#memory.get(account, id);
  }

  async delete(account: string, id: string): Promise<boolean> {
    await this.#ready;
    if (!this.#memory.delete(account, id)) return false;
    await this.#append(JSON.stringify({ a: account, i: id, d: 1 }));
    return true;
  }

  /** Waits for pending writes, then frees the memory (at shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#ready.catch(() => {});
    await this.#writes;
    await this.#handle?.close();
    this.#handle = null;
    this.#memory.close();
  }

  #append(line: string): Promise<void> {
    // A request still finishing as the gateway stops: its line would reopen the file after close.
    if (this.#closed) return Promise.resolve();
    this.#lines++;
    this.#chars += line.length + 1;
    // One write at a time, in order: a delete must not overtake the put it undoes.
    const write = this.#writes.then(async () => {
      this.#handle ??= await open(this.file, 'a', 0o600);
      await this.#handle.write(`${line}\n`);
    });
    this.#writes = write
      .catch((error: unknown) => this.#log.error({ err: error, file: this.file }, 'could not persist a stored response; it will be unknown after a restart'))
      .then(() => (this.#stale() ? this.#compact() : undefined))
      .catch((error: unknown) => this.#log.error({ err: error, file: this.file }, 'could not compact the stored responses file'));
    // The caller is answered once its line is down (or failed, which is logged): never an error to the client.
    return write.catch(() => {});
  }

  async #load(): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    let handle: FileHandle;
    try {
      handle = await open(this.file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    try {
      // Line by line, awaiting between chunks: a large file never holds the event loop.
      for await (const raw of handle.readLines({ encoding: 'utf8' })) {
        if (!raw) continue;
        this.#lines++;
        this.#chars += raw.length + 1;
        let line: LogLine<T>;
        try {
          line = JSON.parse(raw) as LogLine<T>;
        } catch {
          continue; // a line cut short by a crash mid-append
        }
        if ('d' in line) this.#memory.delete(line.a, line.i);
        else if (line.e > Date.now()) this.#memory.put(line.a, line.i, line.v, line.b, line.e);
      }
    } finally {
      await handle.close();
    }
    if (this.#lines > this.#memory.size) await this.#compact();
    else this.#compactedChars = this.#chars;
  }

  /**
   * Mostly lines of replaced, deleted, evicted or expired entries: by count against the live
   * entries, by size against what the last rewrite left (entry sizes are the callers' estimates, so
   * the file is not weighed against them). Either way each rewrite is paid for by as many appends.
   */
  #stale(): boolean {
    return this.#lines > 2 * this.#memory.size + 1000 || this.#chars > 2 * this.#compactedChars + this.#slack;
  }

  /** Rewrites the log with only the live entries, atomically (write aside, then rename). */
  async #compact(): Promise<void> {
    const temp = `${this.file}.tmp`;
    const handle = await open(temp, 'w', 0o600);
    let lines = 0;
    let chars = 0;
    try {
      for (const { id, account, value, bytes, expiresAt } of this.#memory.entries()) {
        const line = `${JSON.stringify({ a: account, i: id, e: expiresAt, b: bytes, v: value })}\n`;
        await handle.write(line);
        lines++;
        chars += line.length;
      }
    } finally {
      await handle.close();
    }
    await rename(temp, this.file);
    // The open handle writes to the file just replaced: the next append opens the new one.
    await this.#handle?.close();
    this.#handle = null;
    this.#lines = lines;
    this.#chars = chars;
    this.#compactedChars = chars;
  }
}
