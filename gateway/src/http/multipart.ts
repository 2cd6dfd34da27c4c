// multipart/form-data, streamed with busboy: each file part is handed to a handler as a stream (to
// disk, or collected when small), and the whole request is cut off at the body limit. Plain Node in,
// plain data out: the request and response, the limits and the exchange's abort signal are given
// (routes/multipart-relay.ts adapts a Koa context), so storage/ and backends never see Koa.
//
// What a form costs while it is read: its whole length counts against the disk budget of forms in
// flight (file parts are spooled or staged on disk), and its text fields, each at most
// MAX_FIELD_BYTES, against the memory budget that JSON bodies share (body-policy.ts).
import busboy from 'busboy';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BudgetHold, watchBody, type BodyPolicy } from './body-policy.ts';
import { ApiError, invalidRequest, payloadTooLarge } from './errors.ts';

/** A multipart request as the parser needs it. */
export interface FormBody {
  /** Its headers (content type, length) and its body. */
  req: IncomingMessage;
  /** What was taken from the budgets is given back when this closes. */
  res: ServerResponse;
  maxBytes: number;
  /** Idle timeout and budgets; null reads without them. */
  policy: BodyPolicy | null;
  /** The exchange's signal: the client left, or the gateway is shutting down. */
  signal?: AbortSignal;
}

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
 * Largest text field (docs/configuration.md). OpenAI's forms carry a prompt, a model name and a few
 * options in their text fields, all far smaller; the files are file parts, which go to disk.
 */
export const MAX_FIELD_BYTES = 1024 * 1024;

/**
 * Reads a multipart body. `onFile` must consume the stream it is given (pipe it somewhere or collect
 * it); its result is kept per part. Fields are collected as strings, repeated names in order.
 */
export async function readMultipart<T>(body: FormBody, onFile: (part: FilePart) => Promise<T>): Promise<MultipartResult<T>> {
  const { req, res, maxBytes, policy, signal } = body;
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('multipart/form-data')) {
    throw invalidRequest('This endpoint takes multipart/form-data (send the file as a form field; let the client set the content type).', null, 'invalid_content_type');
  }
  const declared = Number(req.headers['content-length'] || NaN);
  if (declared > maxBytes) throw payloadTooLarge(maxBytes);

  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: { fieldSize: MAX_FIELD_BYTES, fields: MAX_PARTS, files: MAX_PARTS, parts: MAX_PARTS } });
  } catch (error) {
    throw invalidRequest(`Malformed multipart request: ${(error as Error).message}.`, null, 'invalid_multipart');
  }
  // The form's length goes to the disk budget (taken whole when declared, else as it arrives); a
  // client that stops sending is answered 408. Memory: room for the field busboy is collecting,
  // then each finished field's size (held until the response closes, like a JSON body).
  const memory = policy ? new BudgetHold(policy.budget, res) : null;
  memory?.take(Number.isFinite(declared) ? Math.min(declared, MAX_FIELD_BYTES) : MAX_FIELD_BYTES);
  const watch = policy ? watchBody(req, res, policy.formBudget ? { ...policy, budget: policy.formBudget } : policy, Number.isFinite(declared) ? declared : null, policy.formBudget !== undefined) : null;

  const fields = new Map<string, string[]>();
  const files: MultipartResult<T>['files'] = [];
  const entries: MultipartResult<T>['entries'] = [];
  const pending: Promise<void>[] = [];
  let seen = 0;
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > maxBytes) return callback(new TooLarge());
      callback(null, chunk);
    },
  });
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) {
      limiter.destroy(invalidRequest(`The form field '${name}' is longer than ${MAX_FIELD_BYTES / 1024 / 1024} MB; send files as file parts.`, name, 'field_too_large'));
      return;
    }
    try {
      memory?.take(Buffer.byteLength(name) + Buffer.byteLength(value));
    } catch (error) {
      limiter.destroy(error as Error);
      return;
    }
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

  // Past a limit busboy would drop the rest silently: a form without its later parts is refused instead.
  const refuse = (what: string) => () => limiter.destroy(invalidRequest(`The form has more than ${MAX_PARTS} ${what}; send at most ${MAX_PARTS}.`, null, 'too_many_parts'));
  parser.on('partsLimit', refuse('parts'));
  parser.on('fieldsLimit', refuse('fields'));
  parser.on('filesLimit', refuse('files'));
  watch?.failed.catch((error: Error) => limiter.destroy(error));
  // The request stays out of the pipeline: a pipeline destroys its source on error, which would
  // reset the connection before the client reads our 413 (ADR 3: the error handler drains it instead).
  const onClose = () => {
    if (!req.complete) limiter.destroy(new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.'));
  };
  const onError = (error: Error) => limiter.destroy(error);
  const onAbort = () => limiter.destroy(abortedBy(signal!.reason));
  req.once('close', onClose);
  req.once('error', onError);
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
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
    signal?.removeEventListener('abort', onAbort);
  }
  return { fields, files, entries };
}

/** The exchange was aborted while its form was read: the client left, or the gateway is shutting down. */
function abortedBy(reason: unknown): ApiError {
  if ((reason as { reason?: string } | undefined)?.reason === 'shutdown') {
    return new ApiError(503, 'server_shutting_down', 'The gateway is shutting down; send the request again.', { headers: { 'Retry-After': '1' } });
  }
  return new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.');
}

export function singleField(fields: Map<string, string[]>, name: string): string | undefined {
  const values = fields.get(name);
  return values ? values[values.length - 1] : undefined;
}
