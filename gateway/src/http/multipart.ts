// multipart/form-data, streamed with busboy: each file part is handed to a handler as a stream (to
// disk, or collected when small), and the whole request is cut off at the body limit.
import busboy from 'busboy';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Context } from 'koa';
import { watchBody } from './body-policy.ts';
import { ApiError, invalidRequest, payloadTooLarge } from './errors.ts';
import type { GatewayState } from './state.ts';

export interface FilePart {
  field: string;
  filename: string;
  mimeType: string;
  stream: Readable;
}

export interface MultipartResult<T> {
  fields: Map<string, string[]>;
  /** File parts in the order their handlers finished. */
  files: Array<{ field: string; filename: string; mimeType: string; result: T }>;
  /** Every part in the order the client sent it, so a form can be rebuilt as it came. */
  entries: Array<MultipartEntry<T>>;
}

export type MultipartEntry<T> = { kind: 'field'; name: string; value: string } | { kind: 'file'; name: string; file: MultipartResult<T>['files'][number] };

class TooLarge extends Error {}

/** Parts, fields and files a form may have; busboy stops delivering past them, so the request is refused. */
const MAX_PARTS = 1000;

/**
 * Reads a multipart body. `onFile` must consume the stream it is given (pipe it somewhere or collect
 * it); its result is kept per part. Fields are collected as strings, repeated names in order.
 */
export async function readMultipart<T>(ctx: Context, maxBytes: number, onFile: (part: FilePart) => Promise<T>): Promise<MultipartResult<T>> {
  const type = ctx.get('content-type');
  if (!type.toLowerCase().startsWith('multipart/form-data')) {
    throw invalidRequest('This endpoint takes multipart/form-data (send the file as a form field; let the client set the content type).', null, 'invalid_content_type');
  }
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > maxBytes) throw payloadTooLarge(maxBytes);

  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: ctx.req.headers, limits: { fieldSize: maxBytes, fields: MAX_PARTS, files: MAX_PARTS, parts: MAX_PARTS } });
  } catch (error) {
    throw invalidRequest(`Malformed multipart request: ${(error as Error).message}.`, null, 'invalid_multipart');
  }
  const fields = new Map<string, string[]>();
  const files: MultipartResult<T>['files'] = [];
  const entries: MultipartResult<T>['entries'] = [];
  const pending: Promise<void>[] = [];
  parser.on('field', (name, value) => {
    const list = fields.get(name) ?? [];
    list.push(value);
    fields.set(name, list);
    entries.push({ kind: 'field', name, value });
  });
  parser.on('file', (field, stream, info) => {
    const part = { field, filename: info.filename ?? 'file', mimeType: info.mimeType };
    // The entry takes its place now; its result is filled in when the handler is done with the stream.
    const file = { ...part, result: undefined as T };
    entries.push({ kind: 'file', name: field, file });
    const handled = onFile({ ...part, stream }).then((result) => {
      file.result = result;
      files.push(file);
    });
    // Awaited once the whole body is parsed: a handler that refuses its part early (a bound) must not
    // count as an unhandled rejection meanwhile, which would end the process.
    handled.catch(() => {});
    pending.push(handled);
  });

  let seen = 0;
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > maxBytes) return callback(new TooLarge());
      callback(null, chunk);
    },
  });
  // Past a limit busboy would drop the rest silently: a form without its later parts is refused instead.
  const refuse = (what: string) => () => limiter.destroy(invalidRequest(`The form has more than ${MAX_PARTS} ${what}; send at most ${MAX_PARTS}.`, null, 'too_many_parts'));
  parser.on('partsLimit', refuse('parts'));
  parser.on('fieldsLimit', refuse('fields'));
  parser.on('filesLimit', refuse('files'));
  // The form goes to disk, not into the memory budget; a client that stops sending is still answered 408.
  const policy = (ctx.state as GatewayState | undefined)?.bodyPolicy;
  const watch = policy ? watchBody(ctx.req, ctx.res, policy, null, false) : null;
  watch?.failed.catch((error: Error) => limiter.destroy(error));
  // The request stays out of the pipeline: a pipeline destroys its source on error, which would
  // reset the connection before the client reads our 413 (ADR 3: the error handler drains it instead).
  const req = ctx.req;
  const onClose = () => {
    if (!req.complete) limiter.destroy(new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.'));
  };
  const onError = (error: Error) => limiter.destroy(error);
  req.once('close', onClose);
  req.once('error', onError);
  req.pipe(limiter);
  try {
    await pipeline(limiter, parser);
    await Promise.all(pending);
  } catch (error) {
    req.unpipe(limiter);
    // Handlers may still hold streams open; let them settle before answering.
    await Promise.allSettled(pending);
    if (error instanceof TooLarge) throw payloadTooLarge(maxBytes);
    if (error instanceof ApiError) throw error;
    throw invalidRequest(`Malformed multipart request: ${(error as Error).message}.`, null, 'invalid_multipart');
  } finally {
    watch?.stop();
    req.off('close', onClose);
    req.off('error', onError);
  }
  return { fields, files, entries };
}

/** Collects a small file part into memory, refusing it past `maxBytes`. */
export async function collectStream(stream: Readable, maxBytes: number, param: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      stream.resume();
      throw invalidRequest(`The file in '${param}' is larger than ${Math.round(maxBytes / 1024 / 1024)} MB.`, param, 'file_too_large');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function singleField(fields: Map<string, string[]>, name: string): string | undefined {
  const values = fields.get(name);
  return values ? values[values.length - 1] : undefined;
}
