// JSON request bodies. The declared Content-Length is checked before reading a byte, and an
// undeclared (chunked) body is cut off as soon as it passes the limit, so an oversized request
// costs at most the limit and never the whole upload.
//
// The bytes as received are kept beside the parsed object, so that a request forwarded upstream is
// sent as the client wrote it, or with only its changed top-level members spliced in, instead of
// being serialised again (a 5 MB image was 40% of such a request's CPU when re-serialised).
//
// The rule for code that changes a received body before it is forwarded: assign or delete its
// TOP-LEVEL keys only (`body.stream_options = { ...options, include_usage: true }`). A change in
// place below the top level (`body.stream_options.include_usage = true`) is invisible here and would
// be lost; if one is ever needed, call `markBodyEdited(body)` after it, and the whole body is
// serialised again. Under vitest every forwarded body is checked against the object (see below).
import { isUtf8 } from 'node:buffer';
import { isDeepStrictEqual } from 'node:util';
import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { watchBody, type BodyWatch } from './body-policy.ts';
import { ApiError, invalidRequest, payloadTooLarge } from './errors.ts';
import { countKeys, exceedsDepth, scanObject, spliceMembers, type ObjectScan } from './json-splice.ts';
import type { GatewayState } from './state.ts';

export type JsonObject = Record<string, unknown>;

interface Received {
  /** The body's bytes (without a byte-order mark). */
  bytes: Buffer;
  /** The top-level keys as parsed, and their values, compared by identity to find what changed. */
  keys: string[];
  values: unknown[];
  /** Set by markBodyEdited: the object no longer matches the bytes below its top level. */
  edited: boolean;
  /** The bytes' top-level members; null when the bytes must not be forwarded (see forwardable). Scanned on first use. */
  scan?: ObjectScan | null;
}

const received = new WeakMap<JsonObject, Received>();

/** Below this size an edited body is serialised again: as fast as scanning and splicing it, and simpler. */
const SPLICE_FROM_BYTES = 16 * 1024;

/**
 * Top-level members a JSON body may have (docs/configuration.md). OpenAI's largest request objects
 * have a few dozen parameters; a body of tens of thousands of keys is only ever an attack on the
 * per-key work done for forwarding, and is refused with a 400.
 */
export const MAX_TOP_LEVEL_KEYS = 1000;

/** In the test suites, every forwarded body is parsed back and compared with the object it stands for. */
const SELF_CHECK = Boolean(process.env.VITEST);

/** Deeper JSON is refused with 400: re-serialising it (and any recursive walk) would overflow the stack. */
export const MAX_JSON_DEPTH = 128;

/** A Content-Type's charset: one other than UTF-8 is refused (415) rather than silently misread as UTF-8. */
const CHARSET = /;\s*charset\s*=\s*"?([^;"\s]*)/i;
const UTF8 = /^utf-?8$/i;

export async function readJsonBody(ctx: Context, maxBytes: number): Promise<JsonObject> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > maxBytes) throw payloadTooLarge(maxBytes);
  const charset = CHARSET.exec(ctx.get('content-type'));
  if (charset && !UTF8.test(charset[1])) {
    throw new ApiError(415, 'unsupported_media_type', `The request body must be UTF-8 JSON; charset "${charset[1]}" is not supported.`, { type: 'invalid_request_error' });
  }
  const policy = (ctx.state as GatewayState | undefined)?.bodyPolicy;
  let watch: BodyWatch | null = null;
  let bytes: Buffer;
  try {
    watch = policy ? watchBody(ctx.req, ctx.res, policy, Number.isFinite(declared) ? declared : null) : null;
    const reading = getRawBody(ctx.req, { limit: maxBytes, length: Number.isFinite(declared) ? declared : undefined });
    if (watch) reading.catch(() => {});
    bytes = await (watch ? Promise.race([reading, watch.failed]) : reading);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const e = error as { type?: string };
    if (e.type === 'entity.too.large') throw payloadTooLarge(maxBytes);
    if (e.type === 'request.aborted') throw new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.');
    if (e.type === 'request.size.invalid') throw invalidRequest('The request body is shorter or longer than its Content-Length.');
    throw invalidRequest('The request body could not be read.');
  } finally {
    watch?.stop();
  }
  // A UTF-8 byte-order mark is dropped, as raw-body's decoder did when it decoded the body.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  const text = bytes.toString('utf8');
  // The same whitespace as String#trim, found without copying the text.
  if (!/\S/.test(text)) throw invalidRequest('The request body is empty; send a JSON object.', null, 'invalid_json');
  let value: unknown;
  try {
    value = JSON.parse(text);
    if (exceedsDepth(bytes, MAX_JSON_DEPTH)) {
      throw invalidRequest(`The JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, null, 'json_too_deep');
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw invalidRequest(`We could not parse the JSON body of your request: ${(error as Error).message}`, null, 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  }
  const body = value as JsonObject;
  const keys = Object.keys(body);
  if (keys.length > MAX_TOP_LEVEL_KEYS) {
    throw invalidRequest(`The request body has ${keys.length} top-level members; at most ${MAX_TOP_LEVEL_KEYS} are accepted.`, null, 'too_many_parameters');
  }
  const values = new Array<unknown>(keys.length);
  for (let i = 0; i < keys.length; i++) values[i] = body[keys[i]];
  received.set(body, { bytes, keys, values, edited: false });
  return body;
}

/** Marks a received body as changed below its top level: it will be serialised again when forwarded. */
export function markBodyEdited(body: JsonObject): void {
  const entry = received.get(body);
  if (entry) entry.edited = true;
}

/**
 * The bytes to send upstream for `body` with its `model` set to `model` (null: left as it is). The
 * received bytes when nothing at the top level changed; those bytes with the changed top-level
 * members spliced in when some did; the object serialised again for a small edited body, a body
 * the gateway built itself, one marked edited, and one whose bytes are not forwardable.
 */
export function jsonBytesToForward(body: JsonObject, model: string | null): Buffer {
  const bytes = forwardBytes(body, model);
  if (SELF_CHECK) selfCheck(body, model, bytes);
  return bytes;
}

function forwardBytes(body: JsonObject, model: string | null): Buffer {
  const entry = received.get(body);
  if (!entry || entry.edited) return serialised(body, model);
  const edits = editsOf(body, entry, model);
  if (edits && entry.bytes.length < SPLICE_FROM_BYTES) return serialised(body, model);
  const scan = forwardable(entry);
  if (!scan) return serialised(body, model);
  return edits ? spliceMembers(entry.bytes, scan, edits) : entry.bytes;
}

function serialised(body: JsonObject, model: string | null): Buffer {
  return Buffer.from(JSON.stringify(model === null || body.model === model ? body : { ...body, model }));
}

/** Top-level keys whose value is not the one parsed (JSON text of the new value; undefined: removed), or null. */
function editsOf(body: JsonObject, entry: Received, model: string | null): Map<string, string | undefined> | null {
  let edits: Map<string, string | undefined> | null = null;
  const { keys, values } = entry;
  let kept = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (!Object.hasOwn(body, key)) (edits ??= new Map()).set(key, undefined);
    else {
      kept++;
      if (body[key] !== values[i]) (edits ??= new Map()).set(key, JSON.stringify(body[key]));
    }
  }
  let present = 0;
  for (const _ in body) present++;
  if (present > kept) {
    // A set, not keys.includes per key: that was quadratic in the number of keys.
    const parsed = new Set(keys);
    for (const key in body) if (!parsed.has(key)) (edits ??= new Map()).set(key, JSON.stringify(body[key]));
  }
  if (model !== null && body.model !== model) (edits ??= new Map()).set('model', JSON.stringify(model));
  return edits;
}

/**
 * The bytes' scan, when they mean to any JSON parser exactly what JSON.parse made of them; null
 * otherwise, and the object is serialised again, which settles every case below:
 * - invalid UTF-8: the decoder replaced it, a strict upstream would refuse it;
 * - a key repeated at any depth: JSON.parse keeps the last, other parsers the first, and the gateway
 *   must not check one value (a model, a file id) while the upstream acts on another;
 * - a key written with an escape: V8's JSON.parse can misread one (after `{"x":1,"a\\":2}` it reads
 *   `{"x":1,"a\u0041":2}` with the key `a\` instead of `aA`: nodejs/node#63785, open, and present in
 *   Node 24.21), so the gateway and the upstream could again see different requests. Clients
 *   practically never escape keys.
 */
function forwardable(entry: Received): ObjectScan | null {
  if (entry.scan === undefined) {
    let scan: ObjectScan | null = isUtf8(entry.bytes) ? scanObject(entry.bytes) : null;
    if (scan && (scan.escapedKeys || scan.keyCount !== parsedKeyCount(entry))) scan = null;
    entry.scan = scan;
  }
  return entry.scan;
}

function parsedKeyCount(entry: Received): number {
  let count = entry.keys.length;
  for (const value of entry.values) count += countKeys(value);
  return count;
}

function selfCheck(body: JsonObject, model: string | null, bytes: Buffer): void {
  const expected: unknown = JSON.parse(serialised(body, model).toString('utf8'));
  // Through JSON.stringify once more, as the expected side went: -0 becomes 0 on both.
  const sent: unknown = JSON.parse(JSON.stringify(JSON.parse(bytes.toString('utf8'))));
  if (!isDeepStrictEqual(sent, expected)) {
    throw new Error('The bytes forwarded for a request body do not match the object: a change below its top level was made in place without markBodyEdited (see http/body.ts).');
  }
}
