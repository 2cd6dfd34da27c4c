// Uploaded files of the embedded default, kept by the gateway itself: the bytes and a JSON record sit
// side by side in `${dataDir}/files/`, and an in-memory index rebuilt from the records at start-up
// answers lookups and listings without touching the disk. An upload streams into a `.part` file that
// is renamed only once complete, so a crash or a client that disconnects never leaves a half file
// under a real id, and start-up sweeps whatever an interrupted process left behind.
import { randomBytes, randomInt } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export const FILE_PURPOSES: readonly string[] = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'];

/** The file object exactly as clients see it. */
export interface FileRecord {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  expires_at: number | null;
  status_details: null;
}

/** What is persisted: the public record plus what only the gateway needs. */
interface StoredFile {
  record: FileRecord;
  account: string;
  contentType: string;
  /** Upload order; created_at has only second resolution, and a listing needs a total order. */
  seq: number;
}

/** Bytes of an upload that finished arriving but is not a file yet (its form may still be refused). */
export interface StagedUpload {
  bytes: number;
}

interface DiskUpload extends StagedUpload {
  tempPath: string;
}

/** A file's bytes, ready to be read: whole as a stream (a download), or its first bytes (a file input). */
export interface OpenedFile {
  record: FileRecord;
  contentType: string;
  /** The whole content; reading it to the end (or destroying it) releases the file. */
  stream(): Readable;
  /** Up to `limit` bytes from the start. */
  head(limit: number): Promise<Buffer>;
  /** Releases the file when stream() was not used. */
  close(): Promise<void>;
}

/**
 * The gateway's own files, as the routes use them: in the data directory (FileStore) or, in shared
 * mode, in Redis (RedisFileStore), bounded per account.
 */
export interface FileKeeper {
  whenReady(): Promise<void>;
  /** Takes in an upload's bytes for `account`, before the rest of its form is known. */
  stage(source: Readable, account: string): Promise<StagedUpload>;
  discard(staged: StagedUpload): Promise<void>;
  commit(staged: StagedUpload, file: NewFile): Promise<FileRecord>;
  get(account: string, id: string): Promise<FileRecord | undefined>;
  openContent(account: string, id: string): Promise<OpenedFile | undefined>;
  remove(account: string, id: string): Promise<boolean>;
  list(account: string, query: ListQuery): Promise<ListResult>;
}

export interface NewFile {
  account: string;
  filename: string;
  purpose: string;
  contentType: string;
  expiresAfterSeconds: number | null;
}

export interface ListQuery {
  purpose: string | null;
  order: 'asc' | 'desc';
  limit: number;
  after: string | null;
}

export type ListResult = { ok: true; data: FileRecord[]; hasMore: boolean } | { ok: false; reason: 'unknown_cursor' };

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const ID_LENGTH = 24;
const ID_PATTERN = /^file-[A-Za-z0-9]{24}$/;
const TEMP_SUFFIXES = ['.part', '.tmp'];
/** Deleted ids still usable as a list cursor, so "list everything and delete it" pages correctly. */
const MAX_TOMBSTONES = 10_000;

/** 24 characters of base62 from the CSPRNG (~143 bits): ids are capabilities and must not be guessable. */
export function newFileId(): string {
  let id = 'file-';
  for (let i = 0; i < ID_LENGTH; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/** Strict on purpose: an id becomes part of a path on disk, so nothing but the exact shape passes. */
export function isFileId(value: string): boolean {
  return ID_PATTERN.test(value);
}

export class FileStore implements FileKeeper {
  readonly dir: string;
  private readonly index = new Map<string, StoredFile>();
  private readonly tombstones = new Map<string, { account: string; seq: number }>();
  private nextSeq = 1;
  private readonly ready: Promise<void>;

  constructor(dir: string) {
    this.dir = dir;
    this.ready = this.load();
    // A failed load is reported by the first request that awaits it, not as an unhandled rejection.
    this.ready.catch(() => {});
  }

  /** Resolves once the index is loaded; rejects if the directory cannot be read. */
  whenReady(): Promise<void> {
    return this.ready;
  }

  /** Streams a file part into a temporary file, counting bytes as they pass; cleans up on failure. */
  async stage(source: Readable): Promise<DiskUpload> {
    await this.ready;
    const tempPath = path.join(this.dir, `.upload-${randomBytes(12).toString('hex')}.part`);
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, createWriteStream(tempPath, { flags: 'wx' }));
    } catch (error) {
      await rm(tempPath, { force: true });
      throw error;
    }
    return { tempPath, bytes };
  }

  async discard(staged: StagedUpload): Promise<void> {
    await rm((staged as DiskUpload).tempPath, { force: true });
  }

  /** Turns a staged upload into a file: bytes under their id first, then the record that makes it visible. */
  async commit(staged: StagedUpload, file: NewFile): Promise<FileRecord> {
    await this.ready;
    const id = newFileId();
    const createdAt = Math.floor(Date.now() / 1000);
    const stored: StoredFile = {
      record: {
        id,
        object: 'file',
        bytes: staged.bytes,
        created_at: createdAt,
        filename: file.filename,
        purpose: file.purpose,
        status: 'processed',
        expires_at: file.expiresAfterSeconds === null ? null : createdAt + file.expiresAfterSeconds,
        status_details: null,
      },
      account: file.account,
      contentType: file.contentType,
      seq: this.nextSeq++,
    };
    await rename((staged as DiskUpload).tempPath, this.dataPath(id));
    try {
      const temp = `${this.recordPath(id)}.tmp`;
      await writeFile(temp, JSON.stringify(stored), { flag: 'wx' });
      await rename(temp, this.recordPath(id));
    } catch (error) {
      await rm(this.dataPath(id), { force: true });
      await rm(`${this.recordPath(id)}.tmp`, { force: true });
      throw error;
    }
    this.index.set(id, stored);
    return stored.record;
  }

  /** The record of a file of this account; another account's file is as absent as a missing one. */
  async get(account: string, id: string): Promise<FileRecord | undefined> {
    return (await this.find(account, id))?.record;
  }

  /** Opens the bytes for reading; the open handle survives a concurrent delete. */
  async openContent(account: string, id: string): Promise<OpenedFile | undefined> {
    const stored = await this.find(account, id);
    if (!stored) return undefined;
    let handle: FileHandle;
    try {
      handle = await open(this.dataPath(id), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return {
      record: stored.record,
      contentType: stored.contentType,
      // The stream closes the handle when it ends or is destroyed.
      stream: () => handle.createReadStream(),
      async head(limit) {
        const length = Math.min(stored.record.bytes, limit);
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buffer, 0, length, 0);
        return buffer.subarray(0, bytesRead);
      },
      close: () => handle.close(),
    };
  }

  async remove(account: string, id: string): Promise<boolean> {
    const stored = await this.find(account, id);
    if (!stored) return false;
    await this.forget(stored);
    return true;
  }

  async list(account: string, query: ListQuery): Promise<ListResult> {
    await this.ready;
    let cursor: number | null = null;
    if (query.after !== null) {
      const known = isFileId(query.after) ? (this.index.get(query.after) ?? this.tombstones.get(query.after)) : undefined;
      if (!known || known.account !== account) return { ok: false, reason: 'unknown_cursor' };
      cursor = known.seq;
    }
    const now = Date.now();
    const matching: StoredFile[] = [];
    for (const stored of this.index.values()) {
      if (stored.account !== account) continue;
      if (isExpired(stored, now)) {
        void this.forget(stored).catch(() => {});
        continue;
      }
      if (query.purpose !== null && stored.record.purpose !== query.purpose) continue;
      if (cursor !== null && (query.order === 'asc' ? stored.seq <= cursor : stored.seq >= cursor)) continue;
      matching.push(stored);
    }
    matching.sort((a, b) => (query.order === 'asc' ? a.seq - b.seq : b.seq - a.seq));
    return { ok: true, data: matching.slice(0, query.limit).map((s) => s.record), hasMore: matching.length > query.limit };
  }

  private async find(account: string, id: string): Promise<StoredFile | undefined> {
    await this.ready;
    if (!isFileId(id)) return undefined;
    const stored = this.index.get(id);
    if (!stored || stored.account !== account) return undefined;
    if (isExpired(stored, Date.now())) {
      await this.forget(stored);
      return undefined;
    }
    return stored;
  }

  /** Record first: once it is gone the file is gone for clients, even if removing the bytes fails. */
  private async forget(stored: StoredFile): Promise<void> {
    const id = stored.record.id;
    if (!this.index.delete(id)) return;
    this.tombstones.set(id, { account: stored.account, seq: stored.seq });
    if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value!);
    await rm(this.recordPath(id), { force: true });
    await rm(this.dataPath(id), { force: true });
  }

  private async load(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const names = await readdir(this.dir);
    const present = new Set(names);
    const dataIds = new Set<string>();
    for (const name of names) {
      if (TEMP_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
        await rm(path.join(this.dir, name), { force: true });
      } else if (name.endsWith('.bin') && isFileId(name.slice(0, -4))) {
        dataIds.add(name.slice(0, -4));
      }
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const id = name.slice(0, -5);
      const stored = isFileId(id) ? await readRecord(this.recordPath(id), id) : undefined;
      // A record that cannot be read is left on disk for an operator to inspect, and not served.
      if (!stored) continue;
      if (!dataIds.has(id)) {
        await rm(this.recordPath(id), { force: true });
        continue;
      }
      this.index.set(id, stored);
      this.nextSeq = Math.max(this.nextSeq, stored.seq + 1);
    }
    // Bytes without a record: the process stopped between the two renames of a commit.
    for (const id of dataIds) if (!this.index.has(id) && !present.has(`${id}.json`)) await rm(this.dataPath(id), { force: true });
  }

  private dataPath(id: string): string {
    return path.join(this.dir, `${id}.bin`);
  }

  private recordPath(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }
}

function isExpired(stored: StoredFile, now: number): boolean {
  return stored.record.expires_at !== null && now >= stored.record.expires_at * 1000;
}

async function readRecord(file: string, id: string): Promise<StoredFile | undefined> {
  try {
    const value = JSON.parse(await readFile(file, 'utf8')) as StoredFile;
    if (value?.record?.id !== id || typeof value.account !== 'string' || typeof value.seq !== 'number') return undefined;
    return value;
  } catch {
    return undefined;
  }
}
