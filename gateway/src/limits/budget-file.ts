// Monthly token usage survives a restart in standalone mode: it is written to the data directory,
// at most once per second while it changes and once more at shutdown, by write-then-rename so a
// crash mid-write leaves the previous file whole. At worst the last second of usage is lost.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { BudgetUsage } from './memory-limit-store.ts';

const FLUSH_MS = 1000;

export class BudgetFile {
  readonly file: string;
  #log: Logger;
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> = Promise.resolve();
  #snapshot: () => BudgetUsage = () => ({});

  constructor(dataDir: string, log: Logger) {
    this.file = path.join(dataDir, 'usage', 'monthly-tokens.json');
    this.#log = log;
  }

  async load(): Promise<BudgetUsage> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as unknown;
      if (isBudgetUsage(parsed)) return parsed;
      this.#log.warn({ file: this.file }, 'monthly usage file has an unexpected shape; starting from zero');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.warn({ err: error, file: this.file }, 'monthly usage file unreadable; starting from zero');
    }
    return {};
  }

  /** Where the current usage comes from when a write is due. */
  source(snapshot: () => BudgetUsage): void {
    this.#snapshot = snapshot;
  }

  /** Schedules a write; calls within a second share it. */
  changed(): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#write();
    }, FLUSH_MS);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
      await this.#write();
    }
    await this.#writing;
  }

  #write(): Promise<void> {
    // Writes are chained so two never race on the temporary file.
    this.#writing = this.#writing.then(async () => {
      const temporary = `${this.file}.${process.pid}.tmp`;
      try {
        await mkdir(path.dirname(this.file), { recursive: true });
        await writeFile(temporary, JSON.stringify(this.#snapshot()));
        await rename(temporary, this.file);
      } catch (error) {
        this.#log.error({ err: error, file: this.file }, 'could not save monthly usage; it will be retried on the next change');
      }
    });
    return this.#writing;
  }
}

function isBudgetUsage(value: unknown): value is BudgetUsage {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every(
    (byKey) => byKey && typeof byKey === 'object' && !Array.isArray(byKey) && Object.values(byKey).every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0),
  );
}
