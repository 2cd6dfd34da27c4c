// The worker thread that draws service-test's pictures (image-painter.ts sends the jobs). Painting,
// decoding and PNG encoding are tight loops over millions of pixels, hundreds of milliseconds for a
// large picture: here they cost no other request a thing, where on the event loop they stalled all
// of them. Plain data in and out: the pictures come back as PNG bytes, transferred, not copied.
import { parentPort } from 'node:worker_threads';
import type { PNG } from 'pngjs';
import { ApiError } from '../http/errors.ts';
import { editPicture, encodePng, paintPattern, type PatternOptions } from './images.ts';
import { decodePng } from './images-input.ts';

/** An input picture of an edit: its PNG bytes, and how to name it in an error. */
export interface InputPicture {
  bytes: Uint8Array;
  param: string;
  filename: string;
}

/** One picture per pattern (a request's `n` variants): drawn from the prompt, or over the inputs. */
export type PaintJob = { kind: 'generate'; patterns: PatternOptions[] } | { kind: 'edit'; patterns: PatternOptions[]; images: InputPicture[]; mask: InputPicture | null };

export type PaintReply = { id: number; pngs: Uint8Array[] } | { id: number; error: { status: number; code: string; message: string; param: string | null } };

function paint(job: PaintJob): Uint8Array[] {
  if (job.kind === 'generate') return job.patterns.map((pattern) => owned(encodePng(paintPattern(pattern))));
  const decode = (input: InputPicture): PNG => decodePng(Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength), input.param, input.filename);
  const images = job.images.map(decode);
  const mask = job.mask ? decode(job.mask) : null;
  return job.patterns.map((pattern) => owned(encodePng(editPicture({ ...pattern, images, mask }))));
}

/** A copy in a buffer of its own: a Buffer may sit in Node's shared pool, which cannot be transferred. */
function owned(bytes: Buffer): Uint8Array {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return copy;
}

parentPort?.on('message', ({ id, job }: { id: number; job: PaintJob }) => {
  let reply: PaintReply;
  try {
    const pngs = paint(job);
    parentPort!.postMessage({ id, pngs } satisfies PaintReply, pngs.map((png) => png.buffer as ArrayBuffer));
    return;
  } catch (error) {
    // A bad input is the client's error (400, as thrown by decodePng); anything else is ours.
    reply =
      error instanceof ApiError
        ? { id, error: { status: error.status, code: error.code, message: error.message, param: error.param } }
        : { id, error: { status: 500, code: 'internal_error', message: 'service-test could not draw the picture.', param: null } };
  }
  parentPort!.postMessage(reply);
});
