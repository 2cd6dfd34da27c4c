// service-test's uploaded files in the shared store (shared mode), so a file uploaded through one
// replica is listed, read, used and deleted through any other. Redis is not a blob store: each
// account may keep at most a configured number of files and bytes here (docs/limits.md); an upload
// beyond that is refused with a 400 that says so, and nothing of it stays in Redis.
//
// An upload streams into a temporary key in chunks (APPEND) as it arrives, never whole in memory, and
// is refused as soon as it outgrows the room the account has left. It becomes a file in one script
// that checks the bound again atomically (another replica may have used the room meanwhile) and
// renames the bytes into place. A download reads the bytes back in chunks (GETRANGE). Files with an
// expiry are removed by whichever replica next looks at the account after it has passed.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ApiError } from '../http/errors.ts';
import { FILE_COMMIT, FILE_FORGET } from './redis-file-scripts.ts';
import { RedisUnavailableError, type SharedRedis } from './redis-client.ts';
import { isFileId, newFileId, type FileKeeper, type FileRecord, type ListQuery, type ListResult, type NewFile, type OpenedFile, type StagedUpload } from './files.ts';

export interface RedisFileBounds {
  /** Bytes of files one account may keep in Redis, all files together. */
  maxBytes: number;
  /** Files one account may keep in Redis. */
  maxCount: number;
}

export const DEFAULT_FILE_BOUNDS: Readonly<RedisFileBounds> = Object.freeze({ maxBytes: 25 * 1024 * 1024, maxCount: 100 });

/** Bytes per APPEND and per GETRANGE: large enough to be few, small enough never to stall Redis. */
const CHUNK_BYTES = 1024 * 1024;
/** An upload whose client stalls this long after its last chunk is dropped by Redis itself. */
const UPLOAD_TTL_MS = 10 * 60 * 1000;
const TOMBSTONES = 1000;

interface RedisUpload extends StagedUpload {
  key: string;
}

interface StoredRecord {
  record: FileRecord;
  account: string;
  contentType: string;
}

type Script = (...args: Array<string | number>) => Promise<unknown>;

export class RedisFileStore implements FileKeeper {
  readonly bounds: RedisFileBounds;
  readonly #redis: SharedRedis;

  constructor(redis: SharedRedis, bounds: RedisFileBounds | undefined) {
    this.#redis = redis;
    this.bounds = bounds ?? DEFAULT_FILE_BOUNDS;
    redis.client.defineCommand('tollgateFileCommit', { lua: FILE_COMMIT, numberOfKeys: 6 });
    redis.client.defineCommand('tollgateFileForget', { lua: FILE_FORGET, numberOfKeys: 6 });
  }

  async whenReady(): Promise<void> {}

  async stage(source: Readable, account: string): Promise<StagedUpload> {
    const key = this.#redis.key(tag(account), 'upload', randomBytes(12).toString('hex'));
    let bytes = 0;
    let written = false;
    try {
      const { used, count } = await this.#usage(account);
      if (count >= this.bounds.maxCount || used >= this.bounds.maxBytes) throw this.#full(account, used, count);
      const room = this.bounds.maxBytes - used;
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      const flush = async () => {
        const chunk = Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
        written = true;
        await this.#run((client) => Promise.all([client.append(key, chunk), client.pexpire(key, UPLOAD_TTL_MS)]));
      };
      await eachChunk(source, async (chunk) => {
        bytes += chunk.length;
        if (bytes > room) throw this.#full(account, used, count, bytes);
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= CHUNK_BYTES) await flush();
      });
      if (pendingBytes > 0) await flush();
    } catch (error) {
      // Let the rest of the form arrive (and be ignored) so the client reads the answer.
      source.resume();
      if (written) await this.#drop(key);
      throw error;
    }
    const staged: RedisUpload = { key, bytes };
    return staged;
  }

  async discard(staged: StagedUpload): Promise<void> {
    await this.#drop((staged as RedisUpload).key);
  }

  async commit(staged: StagedUpload, file: NewFile): Promise<FileRecord> {
    const { key: upload, bytes } = staged as RedisUpload;
    const id = newFileId();
    const createdAt = Math.floor(Date.now() / 1000);
    const expiresAt = file.expiresAfterSeconds === null ? null : createdAt + file.expiresAfterSeconds;
    const record: FileRecord = { id, object: 'file', bytes, created_at: createdAt, filename: file.filename, purpose: file.purpose, status: 'processed', expires_at: expiresAt, status_details: null };
    const stored: StoredRecord = { record, account: file.account, contentType: file.contentType };
    const k = this.#keys(file.account, id);
    const reply = (await this.#run((client) =>
      this.#script(client, 'tollgateFileCommit')(k.index, k.totals, k.expiries, k.record, k.data, upload, id, bytes, this.bounds.maxBytes, this.bounds.maxCount, JSON.stringify(stored), expiresAt === null ? '' : expiresAt * 1000),
    )) as number[];
    if (reply[0] === 0) throw this.#full(file.account, reply[1], reply[2], bytes);
    if (reply[0] === -1) throw unavailable('The upload was lost by the shared store before it could be saved');
    return record;
  }

  async get(account: string, id: string): Promise<FileRecord | undefined> {
    return (await this.#find(account, id))?.record;
  }

  async openContent(account: string, id: string): Promise<OpenedFile | undefined> {
    const stored = await this.#find(account, id);
    if (!stored) return undefined;
    const data = this.#keys(account, id).data;
    const range = (start: number, end: number) => this.#run((client) => client.getrangeBuffer(data, start, end));
    const size = stored.record.bytes;
    return {
      record: stored.record,
      contentType: stored.contentType,
      stream: () =>
        Readable.from(
          (async function* () {
            for (let at = 0; at < size; at += CHUNK_BYTES) {
              const chunk = await range(at, Math.min(size, at + CHUNK_BYTES) - 1);
              // Deleted while being read: end the answer short (the client sees an incomplete body).
              if (chunk.length === 0) throw new Error('the file was deleted while it was being read');
              yield chunk;
            }
          })(),
          { objectMode: false },
        ),
      head: async (limit) => (limit <= 0 || size === 0 ? Buffer.alloc(0) : range(0, Math.min(size, limit) - 1)),
      close: async () => {},
    };
  }

  async remove(account: string, id: string): Promise<boolean> {
    const stored = await this.#find(account, id);
    return stored ? this.#forget(account, stored.record) : false;
  }

  async list(account: string, query: ListQuery): Promise<ListResult> {
    await this.#sweep(account);
    const k = this.#keys(account, '');
    let cursor: number | null = null;
    if (query.after !== null) {
      const after = query.after;
      const score = isFileId(after) ? await this.#run(async (client) => (await client.zscore(k.index, after)) ?? (await client.zscore(k.tombstones, after))) : null;
      if (score === null) return { ok: false, reason: 'unknown_cursor' };
      cursor = Number(score);
    }
    // The whole index of one account is small (at most maxCount files): read it in order, filter here.
    const ids = await this.#run((client) =>
      query.order === 'asc' ? client.zrangebyscore(k.index, cursor === null ? '-inf' : `(${cursor}`, '+inf') : client.zrevrangebyscore(k.index, cursor === null ? '+inf' : `(${cursor}`, '-inf'),
    );
    if (ids.length === 0) return { ok: true, data: [], hasMore: false };
    const texts = await this.#run((client) => client.mget(...ids.map((id) => this.#keys(account, id).record)));
    const data: FileRecord[] = [];
    for (const text of texts) {
      if (!text) continue;
      const stored = JSON.parse(text) as StoredRecord;
      if (stored.account !== account || (query.purpose !== null && stored.record.purpose !== query.purpose)) continue;
      data.push(stored.record);
    }
    return { ok: true, data: data.slice(0, query.limit), hasMore: data.length > query.limit };
  }

  /** The account's files and bytes in Redis, after removing what has expired. */
  async #usage(account: string): Promise<{ used: number; count: number }> {
    await this.#sweep(account);
    const [bytes, count] = await this.#run((client) => client.hmget(this.#keys(account, '').totals, 'bytes', 'count'));
    return { used: Number(bytes ?? 0), count: Number(count ?? 0) };
  }

  async #find(account: string, id: string): Promise<StoredRecord | undefined> {
    if (!isFileId(id)) return undefined;
    const text = await this.#run((client) => client.get(this.#keys(account, id).record));
    if (!text) return undefined;
    const stored = JSON.parse(text) as StoredRecord;
    // Another account's file is as absent as a missing one.
    if (stored.account !== account) return undefined;
    if (stored.record.expires_at !== null && Date.now() >= stored.record.expires_at * 1000) {
      await this.#forget(account, stored.record);
      return undefined;
    }
    return stored;
  }

  /** Removes the account's files whose expiry has passed. */
  async #sweep(account: string): Promise<void> {
    const expired = await this.#run((client) => client.zrangebyscore(this.#keys(account, '').expiries, '-inf', Date.now()));
    for (const id of expired) {
      const text = await this.#run((client) => client.get(this.#keys(account, id).record));
      const bytes = text ? (JSON.parse(text) as StoredRecord).record.bytes : 0;
      await this.#forget(account, { id, bytes });
    }
  }

  async #forget(account: string, record: { id: string; bytes: number }): Promise<boolean> {
    const k = this.#keys(account, record.id);
    const removed = await this.#run((client) => this.#script(client, 'tollgateFileForget')(k.index, k.totals, k.expiries, k.tombstones, k.record, k.data, record.id, record.bytes, TOMBSTONES));
    return removed === 1;
  }

  async #drop(key: string): Promise<void> {
    // If this fails the upload expires on its own.
    await this.#redis.run((client) => client.del(key)).catch(() => {});
  }

  /**
   * Every key of one account's files (and of file `id`), in one place. All carry the account's hash
   * tag, as its limit keys do: a script's keys share one Redis Cluster slot, and accounts spread.
   */
  #keys(account: string, id: string) {
    const t = tag(account);
    return {
      index: this.#redis.key(t, 'files'),
      totals: this.#redis.key(t, 'files', 'totals'),
      expiries: this.#redis.key(t, 'files', 'expiries'),
      tombstones: this.#redis.key(t, 'files', 'deleted'),
      record: this.#redis.key(t, 'file', id),
      data: this.#redis.key(t, 'file', id, 'data'),
    };
  }

  #script(client: unknown, name: string): Script {
    return (client as Record<string, Script>)[name].bind(client);
  }

  #full(account: string, used: number, count: number, bytes?: number): ApiError {
    const { maxBytes, maxCount } = this.bounds;
    const what = bytes === undefined ? 'No room is left' : `This file (${bytes.toLocaleString('en-US')} bytes so far) does not fit`;
    return new ApiError(
      400,
      'file_storage_limit_exceeded',
      `${what}: account '${account}' keeps ${count} of at most ${maxCount} files and ${used.toLocaleString('en-US')} of at most ${maxBytes.toLocaleString('en-US')} bytes on this gateway. Delete files (DELETE /v1/files/{file_id}) to make room.`,
      { param: 'file' },
    );
  }

  async #run<T>(call: (client: SharedRedis['client']) => Promise<T>): Promise<T> {
    try {
      return await this.#redis.run(call);
    } catch (error) {
      if (error instanceof RedisUnavailableError) throw unavailable('Files cannot be reached right now (the shared store is unreachable)');
      throw error;
    }
  }
}

function tag(account: string): string {
  return `{${account}}`;
}

/**
 * Hands each chunk of `source` to `handle`, one at a time (paused meanwhile). Unlike a for-await
 * loop, a failure never destroys the source: a multipart parser stalls on a destroyed part, and the
 * client would never get its answer. The caller drains the rest (resume) instead.
 */
function eachChunk(source: Readable, handle: (chunk: Buffer) => Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (error?: unknown) => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (chunk: Buffer) => {
      source.pause();
      handle(chunk).then(
        () => source.resume(),
        (error: unknown) => done(error),
      );
    };
    const onEnd = () => done();
    const onError = (error: Error) => done(error);
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
  });
}

function unavailable(what: string): ApiError {
  return new ApiError(503, 'store_unavailable', `${what}. Retry shortly.`, { headers: { 'Retry-After': '1', 'retry-after-ms': '1000' } });
}
