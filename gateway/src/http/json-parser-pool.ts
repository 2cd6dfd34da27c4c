// A small pool of worker threads that parse large JSON request bodies off the event loop (one
// JSON.parse of 50 MB holds the loop for hundreds of milliseconds, for every client). Built once in
// server.ts; workers start on first use, never keep the process alive, and stop with the server.
// What a parse sends back is small whatever the body's size (json-worker.ts, docs/adr/0021).
import { Worker } from 'node:worker_threads';
import { ApiError } from './errors.ts';
import type { Reference } from './deferred-json.ts';
import type { ObjectScan } from './json-splice.ts';
import { applyPieces, type Piece, type RebuiltString } from './materialize.ts';

export type WorkerRequest =
  | { type: 'parse'; id: number; buffer: ArrayBuffer; offset: number; length: number; inlineMemberBytes: number; inlineTotalBytes: number }
  | { type: 'materialize'; id: number; buffer: ArrayBuffer; offset: number; length: number; keys: string[]; batchBytes: number; maxStringLength: number | null }
  | { type: 'next'; id: number }
  | { type: 'cancel'; id: number };

export interface DeferredFacts {
  bytes: number;
  estimatedTokens: number;
  references: Reference[];
}

export type WorkerReply =
  | { id: number; ok: false; status: number; code: string; message: string; param: string | null }
  | {
      id: number;
      ok: true;
      buffer: ArrayBuffer;
      offset: number;
      length: number;
      keys: string[];
      /** By index into keys. */
      inline: Array<[number, unknown]>;
      deferred: Array<[number, DeferredFacts]>;
      scan: ObjectScan;
    }
  | { id: number; ok: true; pieces: Piece[]; done: false }
  | { id: number; ok: true; pieces: Piece[]; done: true };

type ParseReply = Extract<WorkerReply, { keys: string[] }>;

/** A top-level member's JSON text at most this long comes back as a value… */
const INLINE_MEMBER_BYTES = 64 * 1024;
/** …while all of them together stay within this: a bounded clone for the event loop. */
const INLINE_TOTAL_BYTES = 256 * 1024;
/** Materialising: about this much content per message, so that applying one holds the loop a few ms. */
const MATERIALIZE_BATCH_BYTES = 256 * 1024;
/**
 * A thread with no work for this long is stopped, which gives its whole heap back at once: an idle
 * thread would otherwise keep the garbage of its last bodies (tens of MB) until a collection it may
 * not run for minutes. Starting one again costs a few ms, off the event loop.
 */
const IDLE_STOP_MS = 5000;

export interface ParsedBody {
  /** The bytes to forward: the body's own, or canonical ones when its own cannot be (json-object.ts). */
  bytes: Buffer;
  keys: string[];
  /** By index into keys: a value, or the facts of a member left in the worker. */
  values: Array<{ value: unknown } | { deferred: DeferredFacts }>;
  scan: ObjectScan;
}

interface Job {
  resolve(reply: WorkerReply): void;
  reject(error: Error): void;
  /** Called with every batch of a materialisation. */
  onPieces?(pieces: Piece[]): void;
}

class ParserThread {
  readonly worker: Worker;
  readonly jobs = new Map<number, Job>();
  failed = false;
  idle: NodeJS.Timeout | null = null;

  constructor(onGone: (thread: ParserThread) => void) {
    this.worker = new Worker(new URL('./json-worker.ts', import.meta.url));
    // A worker never keeps the process alive; one busy with a job is referenced by its caller's promise.
    this.worker.unref();
    this.worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    const fail = (error: Error) => {
      if (this.failed) return;
      this.failed = true;
      onGone(this);
      for (const job of this.jobs.values()) job.reject(error);
      this.jobs.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the JSON parser worker exited (${code})`)));
  }

  private onReply(reply: WorkerReply): void {
    const job = this.jobs.get(reply.id);
    if (!job) return;
    if (reply.ok && 'pieces' in reply) {
      try {
        job.onPieces!(reply.pieces);
      } catch (error) {
        this.jobs.delete(reply.id);
        this.worker.postMessage({ type: 'cancel', id: reply.id } satisfies WorkerRequest);
        return job.reject(error as Error);
      }
      if (!reply.done) return this.worker.postMessage({ type: 'next', id: reply.id } satisfies WorkerRequest);
    }
    this.jobs.delete(reply.id);
    job.resolve(reply);
  }
}

export class JsonParserPool {
  readonly size: number;
  readonly #threads: ParserThread[] = [];
  #nextId = 1;
  #closed = false;

  /** `size` workers at most (at least one). */
  readonly #idleStopMs: number;

  constructor(size: number, options: { idleStopMs?: number } = {}) {
    this.size = Math.max(1, Math.floor(size));
    this.#idleStopMs = options.idleStopMs ?? IDLE_STOP_MS;
  }

  /** Threads running now (they stop when idle). */
  get threads(): number {
    return this.#threads.length;
  }

  /**
   * Parses and checks a JSON object body in a worker. `bytes` is handed over (its memory moves to the
   * worker and back, and must not be used meanwhile); use the bytes of the result. Throws the same
   * ApiErrors as the event-loop parse.
   */
  async parse(bytes: Buffer): Promise<ParsedBody> {
    const reply = (await this.#run((id, buffer, offset, length) => ({ type: 'parse', id, buffer, offset, length, inlineMemberBytes: INLINE_MEMBER_BYTES, inlineTotalBytes: INLINE_TOTAL_BYTES }), bytes)) as ParseReply;
    const values = new Array<ParsedBody['values'][number]>(reply.keys.length);
    for (const [index, value] of reply.inline) values[index] = { value };
    for (const [index, deferred] of reply.deferred) values[index] = { deferred };
    return { bytes: Buffer.from(reply.buffer, reply.offset, reply.length), keys: reply.keys, values, scan: reply.scan };
  }

  /**
   * The values of `keys` in the body `bytes`, rebuilt on the event loop a bounded piece at a time.
   * The bytes are handed over for good: the worker frees them once it has parsed them. `rebuilt`
   * lists the strings rebuilt from slices, still unread (materialize.ts). With `maxStringLength`,
   * a member holding a longer string is refused as OpenAI refuses it (string-length.ts), before
   * anything is sent.
   */
  async materialize(bytes: Buffer, keys: string[], maxStringLength: number | null = null): Promise<{ members: Record<string, unknown>; rebuilt: RebuiltString[] }> {
    const members: Record<string, unknown> = {};
    const rebuilt: RebuiltString[] = [];
    await this.#run((id, buffer, offset, length) => ({ type: 'materialize', id, buffer, offset, length, keys, batchBytes: MATERIALIZE_BATCH_BYTES, maxStringLength }), bytes, (pieces) => applyPieces(members, pieces, rebuilt));
    return { members, rebuilt };
  }

  /** Stops the workers; jobs still running fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const threads = this.#threads.splice(0);
    for (const thread of threads) if (thread.idle) clearTimeout(thread.idle);
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }

  #run(request: (id: number, buffer: ArrayBuffer, offset: number, length: number) => WorkerRequest, bytes: Buffer, onPieces?: (pieces: Piece[]) => void): Promise<WorkerReply> {
    if (this.#closed) return Promise.reject(new ApiError(503, 'server_shutting_down', 'The gateway is shutting down.'));
    const thread = this.#leastBusy();
    const id = this.#nextId++;
    // Only memory of its own can be handed over: a slice of a larger buffer (Node's pool of small
    // buffers, a body after its byte-order mark) is copied into an ArrayBuffer of its own first.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : new Uint8Array(bytes);
    const buffer = own.buffer as ArrayBuffer;
    if (thread.idle) clearTimeout(thread.idle);
    thread.idle = null;
    return new Promise<WorkerReply>((resolve, reject) => {
      thread.jobs.set(id, {
        resolve: (reply) => (reply.ok ? resolve(reply) : reject(new ApiError(reply.status, reply.code, reply.message, { param: reply.param }))),
        reject,
        onPieces,
      });
      // Referenced while it has work, so that a caller awaiting it keeps the process up.
      thread.worker.ref();
      thread.worker.postMessage(request(id, buffer, own.byteOffset, own.byteLength), [buffer]);
    }).finally(() => {
      if (thread.jobs.size > 0 || thread.failed) return;
      thread.worker.unref();
      thread.idle = setTimeout(() => this.#stop(thread), this.#idleStopMs).unref();
    });
  }

  #stop(thread: ParserThread): void {
    const index = this.#threads.indexOf(thread);
    if (index >= 0) this.#threads.splice(index, 1);
    thread.failed = true;
    void thread.worker.terminate();
  }

  #leastBusy(): ParserThread {
    let best: ParserThread | null = null;
    for (const thread of this.#threads) if (!best || thread.jobs.size < best.jobs.size) best = thread;
    if (best && (best.jobs.size === 0 || this.#threads.length >= this.size)) return best;
    const thread = new ParserThread((gone) => {
      const index = this.#threads.indexOf(gone);
      if (index >= 0) this.#threads.splice(index, 1);
    });
    this.#threads.push(thread);
    return thread;
  }
}
