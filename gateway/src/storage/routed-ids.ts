// Ids that an upstream issued for an account (file-…, batch_…, thread_…, asst_…, vs_…), each mapped
// to the upstream that knows it. Unlike response ids these live for days (a batch runs for 24 hours,
// its output file for 30 days), so the map is persisted: an append-only log of JSON lines in the data
// directory, replayed at start-up and rewritten compactly when it has grown mostly stale. Keys are
// (account, id): another account's id is simply absent, which is what makes it a 404 for them.
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';

export type RoutedKind = 'file' | 'batch' | 'thread' | 'assistant' | 'vector_store';

/** What the routes need of a routed-id store: this log, or the shared one (storage/redis-routed-ids.ts). */
export type RoutedIdStore = Pick<RoutedIds, 'lookup' | 'remember' | 'forget' | 'flush'>;

export interface RoutedId {
  upstream: string;
  kind: RoutedKind;
}

type LogLine = { a: string; i: string; u: string; k: RoutedKind } | { a: string; i: string; d: 1 };

const LOG_FILE = 'routed-ids.jsonl';

export interface RoutedIdsOptions {
  /** Most ids kept (oldest dropped first). */
  max?: number;
  /** Where a failed write is reported (it is also counted in `writeFailures`). */
  log?: Pick<Logger, 'error'>;
}

export class RoutedIds {
  readonly file: string;
  #routes = new Map<string, RoutedId>();
  #max: number;
  #log: RoutedIdsOptions['log'];
  #lines = 0;
  /** The last write, settled either way: the next one waits for it, never for its success. */
  #writes: Promise<void> = Promise.resolve();
  #ready: Promise<void>;
  /** Appends that failed since start (disk full, EIO): each lost id is 404 for its owner after a restart. */
  writeFailures = 0;

  constructor(dir: string, options: RoutedIdsOptions | number = {}) {
    const { max = 250_000, log } = typeof options === 'number' ? { max: options } : options;
    this.file = path.join(dir, LOG_FILE);
    this.#max = max;
    this.#log = log;
    this.#ready = this.#load(dir);
    // A failed load is reported by the first request that awaits it, not as an unhandled rejection.
    this.#ready.catch(() => {});
  }

  async lookup(account: string, id: string): Promise<RoutedId | undefined> {
    await this.#ready;
    return this.#routes.get(keyOf(account, id));
  }

  async remember(account: string, id: string, route: RoutedId): Promise<void> {
    await this.#ready;
    const key = keyOf(account, id);
    const known = this.#routes.get(key);
    if (known?.upstream === route.upstream && known.kind === route.kind) return;
    this.#routes.delete(key);
    this.#routes.set(key, route);
    const lines: LogLine[] = [{ a: account, i: id, u: route.upstream, k: route.kind }];
    if (this.#routes.size > this.#max) {
      // Oldest first out: a bound on memory and disk; documented as such in docs/upstreams.md.
      const oldest = this.#routes.keys().next().value!;
      this.#routes.delete(oldest);
      const [a, i] = oldest.split('\u0000');
      lines.push({ a, i, d: 1 });
    }
    await this.#append(lines);
  }

  async forget(account: string, id: string): Promise<void> {
    await this.#ready;
    if (this.#routes.delete(keyOf(account, id))) await this.#append([{ a: account, i: id, d: 1 }]);
  }

  /** Waits for pending writes (at shutdown). */
  flush(): Promise<void> {
    return this.#writes;
  }

  #append(lines: LogLine[]): Promise<void> {
    const text = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    this.#lines += lines.length;
    // One write at a time, in order: lines of one id must not overtake each other. A failed write
    // fails its own caller and is reported here, loudly; the chain goes on, so later ids are still kept.
    const write = this.#writes.then(() => appendFile(this.file, text, { mode: 0o600 }));
    this.#writes = write.catch((error: unknown) => {
      this.writeFailures++;
      this.#log?.error({ err: error, file: this.file, lines: lines.length }, 'could not persist upstream id routes; these ids will be unknown after a restart');
    });
    return write;
  }

  async #load(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      this.#lines++;
      let line: LogLine;
      try {
        line = JSON.parse(raw);
      } catch {
        continue; // a line cut short by a crash mid-append
      }
      const key = keyOf(line.a, line.i);
      this.#routes.delete(key);
      if (!('d' in line)) this.#routes.set(key, { upstream: line.u, kind: line.k });
    }
    if (this.#lines > 2 * this.#routes.size + 1000) await this.#compact();
  }

  /** Rewrites the log with only the live routes, atomically (write aside, then rename). */
  async #compact(): Promise<void> {
    const temp = `${this.file}.tmp`;
    const lines = [...this.#routes].map(([key, route]) => {
      const [a, i] = key.split('\u0000');
      return `${JSON.stringify({ a, i, u: route.upstream, k: route.kind })}\n`;
    });
    await writeFile(temp, lines.join(''), { mode: 0o600 });
    await rename(temp, this.file);
    this.#lines = lines.length;
  }
}

function keyOf(account: string, id: string): string {
  return `${account}\u0000${id}`;
}
