// Images answered with response_format=url. The id is 32 random base64url characters (192 bits),
// so the URL itself is the capability, like OpenAI's signed URLs: whoever holds it may download the
// image, no key needed, for one hour. Expiry is read from the file's mtime rather than kept in
// memory, so it survives restarts and several replicas sharing one data directory agree on it.
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync, unlinkSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const IMAGE_TTL_MS = 60 * 60 * 1000;
const ID_PATTERN = /^[A-Za-z0-9_-]{32}$/;
const FILE_PATTERN = /^[A-Za-z0-9_-]{32}\.png$/;

export interface StoredImage {
  bytes: Buffer;
  expiresAt: number;
}

/** What the image routes need: this directory store, or the shared one (storage/redis-image-store.ts). */
export type ImageKeeper = Pick<ImageStore, 'save' | 'load'>;

export class ImageStore {
  readonly dir: string;
  readonly ttlMs: number;
  private sweeping = false;

  constructor(dir: string, ttlMs = IMAGE_TTL_MS) {
    this.dir = dir;
    this.ttlMs = ttlMs;
  }

  static isValidId(id: string): boolean {
    return ID_PATTERN.test(id);
  }

  async save(png: Buffer): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    const id = randomBytes(24).toString('base64url');
    await writeFile(this.fileOf(id), png, { flag: 'wx' });
    return id;
  }

  /** The image, or null when the id is malformed, unknown or expired (an expired file is removed). */
  async load(id: string, now = Date.now()): Promise<StoredImage | null> {
    if (!ImageStore.isValidId(id)) return null;
    const file = this.fileOf(id);
    try {
      const info = await stat(file);
      const expiresAt = info.mtimeMs + this.ttlMs;
      if (expiresAt <= now) {
        await unlink(file).catch(() => {});
        return null;
      }
      return { bytes: await readFile(file), expiresAt };
    } catch {
      return null;
    }
  }

  /** Removes expired files; run on a timer. Overlapping runs are skipped, not queued. */
  async sweep(now = Date.now()): Promise<number> {
    if (this.sweeping) return 0;
    this.sweeping = true;
    let removed = 0;
    try {
      const names = await readdir(this.dir).catch(() => [] as string[]);
      for (const name of names) {
        if (!FILE_PATTERN.test(name)) continue;
        const file = path.join(this.dir, name);
        const info = await stat(file).catch(() => null);
        if (info && info.mtimeMs + this.ttlMs <= now) {
          await unlink(file).then(
            () => removed++,
            () => {},
          );
        }
      }
    } finally {
      this.sweeping = false;
    }
    return removed;
  }

  /**
   * The same sweep, synchronously, for start-up: files left by an earlier run are gone before the
   * first request, and nothing else is waiting on the event loop yet.
   */
  sweepSync(now = Date.now()): number {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      if (!FILE_PATTERN.test(name)) continue;
      const file = path.join(this.dir, name);
      try {
        if (statSync(file).mtimeMs + this.ttlMs <= now) {
          unlinkSync(file);
          removed++;
        }
      } catch {
        // Removed meanwhile by another replica's sweep: nothing to do.
      }
    }
    return removed;
  }

  /** Sweeps every `intervalMs` without keeping the process alive; returns the function that stops it. */
  startSweeping(intervalMs: number, onError: (error: unknown) => void): () => void {
    const timer = setInterval(() => {
      this.sweep().catch(onError);
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  private fileOf(id: string): string {
    return path.join(this.dir, `${id}.png`);
  }
}
