// The JSON parser worker (json-parser-pool.ts starts a few): large request bodies are parsed here, off
// the event loop. What goes back is small whatever the body's size (docs/adr/0021):
// - `parse`: the checks of json-object.ts, the top-level scan used to forward the bytes (or, when the
//   bytes cannot be forwarded as they are, canonical bytes and their scan), the small top-level
//   members as values, and for each large one only its size, token estimate and referenced ids;
// - `materialize` (service-test, which reads whole requests): the large members again, sent as a
//   series of small pieces the event loop applies one message at a time (materialize.ts), once
//   their strings are checked against the caller's length limit (string-length.ts).
// The body's ArrayBuffer is transferred here and back (never copied), or freed here when the event
// loop will not need it again.
import { parentPort } from 'node:worker_threads';
import { ApiError } from './errors.ts';
import { referencesIn } from './body-references.ts';
import { estimateInput } from '../limits/estimate.ts';
import { forwardableScan, parseJsonObject } from './json-object.ts';
import { keyOf, scanObject, type ObjectScan } from './json-splice.ts';
import { piecesOf, type Piece } from './materialize.ts';
import { checkStringLengths } from './string-length.ts';
import type { WorkerReply, WorkerRequest } from './json-parser-pool.ts';

const port = parentPort!;
/** Materialisations in progress: the pieces still to send, by job id. */
const pending = new Map<number, { pieces: Iterator<Piece[]>; buffer: ArrayBuffer }>();

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function failure(id: number, error: unknown): WorkerReply {
  if (error instanceof ApiError) return { id, ok: false, status: error.status, code: error.code, message: error.message, param: error.param };
  return { id, ok: false, status: 500, code: 'internal_error', message: 'The request body could not be parsed.', param: null };
}

port.on('message', (request: WorkerRequest) => {
  try {
    if (request.type === 'parse') parse(request);
    else if (request.type === 'materialize') materialize(request);
    else if (request.type === 'next') sendPieces(request.id);
    else release(request.id);
  } catch (error) {
    release(request.id);
    if (request.type === 'parse' || request.type === 'materialize') free(request.buffer);
    reply(failure(request.id, error));
  }
});

/**
 * A body's memory is given back at once when nobody needs it any more (a refused body, one whose
 * members have been sent), not at this thread's next garbage collection, which an idle thread may
 * not run for a long time: detaching an ArrayBuffer frees its memory.
 */
function free(buffer: ArrayBuffer): void {
  if (!buffer.detached) buffer.transfer(0);
}

function release(id: number): void {
  const job = pending.get(id);
  if (job) free(job.buffer);
  pending.delete(id);
}

function parse(request: Extract<WorkerRequest, { type: 'parse' }>): void {
  const { id, inlineMemberBytes, inlineTotalBytes } = request;
  let bytes = Buffer.from(request.buffer, request.offset, request.length);
  const { body, keys } = parseJsonObject(bytes);
  const values = keys.map((key) => body[key]);
  let scan: ObjectScan | null = forwardableScan(bytes, keys, values);
  if (!scan) {
    // Forwarded as the gateway read it, as the event loop would have serialised it again.
    free(request.buffer);
    bytes = Buffer.from(JSON.stringify(body));
    scan = scanObject(bytes);
  }
  const sizes = new Map<string, number>();
  for (const member of scan.members) sizes.set(keyOf(bytes, member), member.end - member.valueStart);
  // Small members come back as values, smallest first, while they fit; the rest stay here.
  const order = keys.map((key, i) => i).sort((a, b) => sizes.get(keys[a])! - sizes.get(keys[b])!);
  const inline: Array<[number, unknown]> = [];
  const deferred: Array<[number, { bytes: number; estimatedTokens: number; references: ReturnType<typeof referencesIn> }]> = [];
  let total = 0;
  for (const i of order) {
    const size = sizes.get(keys[i])!;
    if (size <= inlineMemberBytes && total + size <= inlineTotalBytes) {
      total += size;
      inline.push([i, values[i]]);
    } else {
      deferred.push([i, { bytes: size, estimatedTokens: estimateInput(values[i]), references: referencesIn({ [keys[i]]: values[i] }) }]);
    }
  }
  const buffer = bytes.buffer as ArrayBuffer;
  reply({ id, ok: true, buffer, offset: bytes.byteOffset, length: bytes.length, keys, inline, deferred, scan }, [buffer]);
}

function materialize(request: Extract<WorkerRequest, { type: 'materialize' }>): void {
  const bytes = Buffer.from(request.buffer, request.offset, request.length);
  const { body } = parseJsonObject(bytes);
  const members = request.keys.map((key) => [key, body[key]] as [string, unknown]);
  if (request.maxStringLength !== null) checkStringLengths(Object.fromEntries(members), request.maxStringLength);
  pending.set(request.id, { pieces: piecesOf(members, request.batchBytes), buffer: request.buffer });
  sendPieces(request.id);
}

/** One batch per request from the event loop: it asks for the next only when it has applied this one. */
function sendPieces(id: number): void {
  const job = pending.get(id);
  if (!job) return;
  const next = job.pieces.next();
  if (!next.done) return reply({ id, ok: true, pieces: next.value, done: false });
  release(id);
  reply({ id, ok: true, pieces: [], done: true });
}
