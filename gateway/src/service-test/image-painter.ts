// service-test's pictures are drawn off the event loop, in worker threads (image-worker.ts): a
// 2048x2048 picture is hundreds of milliseconds of pixel loops and PNG encoding, during which every
// other request of the gateway would wait. Built once in server.ts and passed down; workers start on
// the first picture asked for (most gateways never draw one) and are ended when the server closes.
//
// A small fixed pool rather than a library: one kind of job, a queue and a restart on a crash is all
// it needs. A job is a whole request (its `n` variants), so the inputs of an edit are sent once.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../http/errors.ts';
import type { PaintJob, PaintReply } from './image-worker.ts';

const WORKER_URL = new URL('./image-worker.ts', import.meta.url);

interface Pending {
  id: number;
  job: PaintJob;
  resolve: (pngs: Buffer[]) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Pending | null;
}

export class ImagePainter {
  readonly size: number;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 0;
  #closed = false;

  /** `size` workers at most; by default one core is left to the event loop. */
  constructor(size = Math.max(1, Math.min(4, availableParallelism() - 1))) {
    this.size = size;
  }

  /** PNG bytes of each of `job`'s pictures, in order; rejects with a 400 ApiError for a bad input. */
  paint(job: PaintJob): Promise<Buffer[]> {
    if (this.#closed) return Promise.reject(new ApiError(503, 'server_shutting_down', 'The gateway is shutting down; send the request again.'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: ++this.#nextId, job, resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends the workers; jobs still waiting or running are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    const gone = new ApiError(503, 'server_shutting_down', 'The gateway is shutting down; send the request again.');
    for (const pending of this.#queue.splice(0)) pending.reject(gone);
    const slots = this.#slots.splice(0);
    for (const slot of slots) slot.job?.reject(gone);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => s.job === null);
      if (!slot && this.#slots.length < this.size) slot = this.#start();
      if (!slot) return;
      const pending = this.#queue.shift()!;
      slot.job = pending;
      slot.worker.postMessage({ id: pending.id, job: pending.job }, transferable(pending.job));
    }
  }

  #start(): Slot {
    const worker = new Worker(WORKER_URL);
    // An idle pool must not keep the process alive; a busy one is held by its requests anyway.
    worker.unref();
    const slot: Slot = { worker, job: null };
    worker.on('message', (reply: PaintReply) => {
      const pending = slot.job;
      if (!pending || pending.id !== reply.id) return;
      slot.job = null;
      if ('error' in reply) pending.reject(new ApiError(reply.error.status, reply.error.code, reply.error.message, { param: reply.error.param }));
      else pending.resolve(reply.pngs.map((png) => Buffer.from(png.buffer, png.byteOffset, png.byteLength)));
      this.#dispatch();
    });
    // A crashed worker fails its job only; the next job gets a new one.
    const lost = (error: Error) => {
      const index = this.#slots.indexOf(slot);
      if (index === -1) return;
      this.#slots.splice(index, 1);
      slot.job?.reject(error);
      slot.job = null;
      if (!this.#closed) this.#dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the image worker exited with code ${code}`)));
    this.#slots.push(slot);
    return slot;
  }
}

/** An edit's input bytes are moved to the worker, not copied, when they own their memory. */
function transferable(job: PaintJob): ArrayBuffer[] {
  if (job.kind !== 'edit') return [];
  const inputs = job.mask ? [...job.images, job.mask] : job.images;
  const buffers = new Set<ArrayBuffer>();
  for (const { bytes } of inputs) {
    const buffer = bytes.buffer as ArrayBuffer;
    if (bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength) buffers.add(buffer);
  }
  return [...buffers];
}
