// The standalone source: one YAML file of manifests, hot-reloaded. fs.watch on the directory catches
// editors that replace the file by rename; a cheap stat poll is the safety net for file systems where
// inotify is missing or lossy. An invalid file is refused and the last good snapshot keeps serving.
import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import { applyResources } from './apply.ts';
import { parseManifests } from './manifests.ts';
import type { ResourceSource, ResourceStore } from './store.ts';

export interface FileSourceStatus {
  file: string;
  loadedAt: string | null;
  lastError: string[] | null;
}

export class FileSource implements ResourceSource {
  readonly file: string;
  #store: ResourceStore;
  #log: Logger;
  #pollMs: number;
  #watcher: FSWatcher | null = null;
  #poll: NodeJS.Timeout | null = null;
  #debounce: NodeJS.Timeout | null = null;
  #lastStat = '';
  #lastDigest = '';
  #reloading: Promise<void> = Promise.resolve();
  status: FileSourceStatus;
  /** When the file was last found applied or unchanged (ms since the epoch), for the sync-age metric. */
  lastSyncAt: number | null = null;

  constructor(file: string, store: ResourceStore, log: Logger, pollMs = 1000) {
    this.file = file;
    this.#store = store;
    this.#log = log;
    this.#pollMs = pollMs;
    this.status = { file, loadedAt: null, lastError: null };
  }

  async start(): Promise<void> {
    const errors = await this.#load();
    if (errors) throw new Error(`Refusing to start: ${this.file} is invalid:\n  ${errors.join('\n  ')}`);
    this.#watcher = watch(path.dirname(this.file), { persistent: false }, (_event, name) => {
      if (name === null || name === path.basename(this.file)) this.#schedule(true);
    });
    this.#watcher.on('error', (error) => this.#log.warn({ err: error, file: this.file }, 'config watch failed; polling continues'));
    this.#poll = setInterval(() => this.#schedule(false), this.#pollMs);
    this.#poll.unref();
  }

  async stop(): Promise<void> {
    this.#watcher?.close();
    if (this.#poll) clearInterval(this.#poll);
    if (this.#debounce) clearTimeout(this.#debounce);
    await this.#reloading;
  }

  /** Re-reads the file now; resolves once the change (or its refusal) has been applied. */
  reload(): Promise<void> {
    this.#reloading = this.#reloading.then(() => this.#load().then(() => undefined));
    return this.#reloading;
  }

  #forced = false;

  /** A watch event forces a read (the digest still skips no-op rebuilds); a poll tick first compares stat. */
  #schedule(force: boolean): void {
    this.#forced ||= force;
    // Editors write in bursts (truncate, write, rename); settle for a moment before reading.
    if (this.#debounce) return;
    this.#debounce = setTimeout(() => {
      this.#debounce = null;
      const forced = this.#forced;
      this.#forced = false;
      void this.#reloadIfChanged(forced);
    }, 50);
  }

  async #reloadIfChanged(forced: boolean): Promise<void> {
    try {
      if (forced) return await this.reload();
      const info = await stat(this.file, { bigint: true });
      const signature = `${info.ino}:${info.size}:${info.mtimeNs}`;
      if (signature === this.#lastStat && this.status.lastError === null) {
        this.lastSyncAt = Date.now();
        return;
      }
      if (signature === this.#lastStat) return;
    } catch {
      // Missing for a moment during an editor's rename; the next event or poll picks it up.
      return;
    }
    await this.reload();
  }

  /** Returns the refusal reasons, or null when the file was applied (or unchanged). */
  async #load(): Promise<string[] | null> {
    let text: string;
    let signature: string;
    try {
      const info = await stat(this.file, { bigint: true });
      signature = `${info.ino}:${info.size}:${info.mtimeNs}`;
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      return this.#refuse([`${this.file}: cannot read: ${(error as Error).message}`]);
    }
    // A writer that truncates and then writes (most tools that are not editors) can be caught in
    // the middle: if the file changed while we read it, this read is void and the next event retries.
    const after = await stat(this.file, { bigint: true }).catch(() => null);
    if (!after || `${after.ino}:${after.size}:${after.mtimeNs}` !== signature) {
      this.#schedule(true);
      return null;
    }
    this.#lastStat = signature;
    const digest = createHash('sha256').update(text).digest('hex');
    if (digest === this.#lastDigest) {
      if (this.status.lastError === null) this.lastSyncAt = Date.now();
      return null;
    }
    const parsed = parseManifests(text, path.basename(this.file));
    if (!parsed.ok) return this.#refuse(parsed.errors);
    if (parsed.resources.length === 0) {
      // Also what a half-written file looks like; applying it would revoke every key at once.
      return this.#refuse([`${path.basename(this.file)}: contains no resources; an empty file is refused rather than revoking every key at once`]);
    }
    applyResources(this.#store, parsed.resources, this.#log, { file: this.file });
    this.#lastDigest = digest;
    this.status = { file: this.file, loadedAt: new Date().toISOString(), lastError: null };
    this.lastSyncAt = Date.now();
    return null;
  }

  #refuse(errors: string[]): string[] {
    this.status = { ...this.status, lastError: errors };
    for (const error of errors) this.#log.error({ file: this.file }, `config refused, last good snapshot keeps serving: ${error}`);
    return errors;
  }
}
