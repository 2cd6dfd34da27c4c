// Multipart requests parked on disk. The model of an image edit or a transcription is a form field
// that may come after a 50 MB file part, so the target is known only once the whole body has been
// read; holding the parts in memory until then would cost up to 50 MB per request. File parts are
// spooled to temporary files instead (small text fields stay in memory), and the form can then be
// rebuilt as a stream as many times as there are attempts. Every spooled file is removed when the
// request ends, whichever way it ends; start-up removes what a crashed process left behind.
//
// Bounded as a whole: a form in flight counts against the disk budget of forms (TOLLGATE_SPOOL_BUDGET_BYTES)
// while it is read and until its request ends, its text fields and any part read back into memory
// against the memory budget of bodies (http/body-policy.ts).
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, openAsBlob, rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FormData } from 'undici';
import { BudgetHold } from '../http/body-policy.ts';
import { readMultipart, singleField, type FormBody, type MultipartEntry } from '../http/multipart.ts';

export interface SpooledFile {
  path: string;
  bytes: number;
}

export interface SpooledPart {
  field: string;
  filename: string;
  mimeType: string;
  spooled: SpooledFile;
}

export class SpooledForm {
  readonly fields: Map<string, string[]>;
  /** File parts in the order the client sent them. */
  readonly files: SpooledPart[];
  readonly #entries: Array<MultipartEntry<SpooledFile>>;
  readonly #paths: string[];
  readonly #memory: BudgetHold | null;

  constructor(fields: Map<string, string[]>, entries: Array<MultipartEntry<SpooledFile>>, paths: string[], memory: BudgetHold | null = null) {
    this.fields = fields;
    this.#entries = entries;
    this.#paths = paths;
    this.#memory = memory;
    this.files = entries.flatMap((e) => (e.kind === 'file' ? [{ field: e.file.field, filename: e.file.filename, mimeType: e.file.mimeType, spooled: e.file.result }] : []));
  }

  field(name: string): string | undefined {
    return singleField(this.fields, name);
  }

  /**
   * The bytes of one part, for the in-process service-test model (bounded by the body limit). They
   * count against the memory budget until the request ends (503 server_busy when they do not fit).
   */
  read(part: SpooledPart): Promise<Buffer> {
    this.hold(part.spooled.bytes);
    return readFile(part.spooled.path);
  }

  /** Counts `bytes` more that this request holds in memory because of its form (a decoded image, say). */
  hold(bytes: number): void {
    this.#memory?.take(bytes);
  }

  /**
   * The form as the client sent it, with some fields replaced (the model, rewritten per target). File
   * parts are file-backed Blobs: nothing is read until the body is sent, and then only as fast as
   * the upstream takes it. undici computes the Content-Length from the known part sizes.
   */
  async toFormData(replace: Record<string, string> = {}): Promise<FormData> {
    const form = new FormData();
    for (const entry of this.#entries) {
      if (entry.kind === 'field') form.append(entry.name, entry.name in replace ? replace[entry.name] : entry.value);
      else form.append(entry.name, await openAsBlob(entry.file.result.path, { type: entry.file.mimeType }), entry.file.filename);
    }
    return form;
  }

  /** Idempotent; safe to call from several clean-up paths at once. */
  async cleanup(): Promise<void> {
    const paths = this.#paths.splice(0);
    await Promise.all(paths.map((p) => rm(p, { force: true })));
  }
}

export class MultipartSpool {
  readonly dir: string;

  #made = false;

  constructor(dir: string) {
    this.dir = dir;
    // Only this process spools here; anything present now was left by one that stopped mid-request.
    // The directory itself is made by the first form that needs it.
    rmSync(dir, { force: true, recursive: true });
  }

  /**
   * Reads a whole multipart request, spooling file parts to disk, within `body.maxBytes` (413 past it). The
   * caller removes the files with `cleanup()` as soon as it is done, and on its exchange's end.
   */
  async read(body: FormBody): Promise<SpooledForm> {
    if (!this.#made) {
      mkdirSync(this.dir, { recursive: true });
      this.#made = true;
    }
    const paths: string[] = [];
    const removeAll = () => Promise.all(paths.splice(0).map((p) => rm(p, { force: true })));
    try {
      const form = await readMultipart(body, async (part) => {
        const file = path.join(this.dir, `${randomBytes(12).toString('hex')}.part`);
        paths.push(file);
        let bytes = 0;
        const counter = new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            bytes += chunk.length;
            callback(null, chunk);
          },
        });
        await pipeline(part.stream, counter, createWriteStream(file, { flags: 'wx' }));
        return { path: file, bytes };
      });
      return new SpooledForm(form.fields, form.entries, paths, body.policy ? new BudgetHold(body.policy.budget, body.res) : null);
    } catch (error) {
      await removeAll();
      throw error;
    }
  }
}
