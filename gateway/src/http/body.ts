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
//
// A body of the policy's offload size or more is parsed in a worker thread (json-parser-pool.ts,
// docs/adr/0021): its large top-level members stay there, and the object holds a DeferredJson for
// each, with the facts the forwarding path needs. Code that reads a whole request calls readWholeJson.
import { isDeepStrictEqual } from 'node:util';
import getRawBody from 'raw-body';
import type { Context } from 'koa';
import type { IncomingMessage } from 'node:http';
import { budgetExhausted, watchBody, type BodyPolicy, type BodyWatch } from './body-policy.ts';
import { DeferredJson } from './deferred-json.ts';
import { ApiError, invalidRequest, payloadTooLarge } from './errors.ts';
import { forwardableScan, parseJsonObject } from './json-object.ts';
import type { JsonParserPool } from './json-parser-pool.ts';
import { keyOf, spliceMembers, type ObjectScan } from './json-splice.ts';
import { flattenInTurns } from './materialize.ts';
import { checkStringLengths } from './string-length.ts';
import type { GatewayState } from './state.ts';

export { MAX_JSON_DEPTH, MAX_TOP_LEVEL_KEYS } from './json-object.ts';

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
  /** A large body parsed off the event loop: the members left in the worker (DeferredJson values), and the pool that can bring them. */
  deferred?: { keys: string[]; parser: JsonParserPool };
  /** Read whole by readWholeJson, its bytes freed: it can no longer be forwarded. */
  consumed?: boolean;
}

const received = new WeakMap<JsonObject, Received>();

/** Below this size an edited body is serialised again: as fast as scanning and splicing it, and simpler. */
const SPLICE_FROM_BYTES = 16 * 1024;

/** In the test suites, every forwarded body is parsed back and compared with the object it stands for. */
const SELF_CHECK = Boolean(process.env.VITEST);

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
  const state = ctx.state as GatewayState | undefined;
  const policy = state?.bodyPolicy;
  let watch: BodyWatch | null = null;
  let bytes: Buffer | null = Number.isFinite(declared) ? takeBuffered(ctx.req, declared, policy, state?.exchange) : null;
  if (!bytes) try {
    watch = policy ? watchBody(ctx.req, ctx.res, policy, Number.isFinite(declared) ? declared : null) : null;
    const large = Number.isFinite(declared) && declared >= (policy?.offloadFromBytes ?? Infinity);
    const reading = large ? readDeclared(ctx.req, declared) : getRawBody(ctx.req, { limit: maxBytes, length: Number.isFinite(declared) ? declared : undefined });
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
  if (!bytes) throw invalidRequest('The request body could not be read.');
  // A UTF-8 byte-order mark is dropped, as raw-body's decoder did when it decoded the body.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  if (policy?.parser && bytes.length >= policy.offloadFromBytes) return parseOffLoop(bytes, policy.parser);
  const { body, keys } = parseJsonObject(bytes);
  const values = new Array<unknown>(keys.length);
  for (let i = 0; i < keys.length; i++) values[i] = body[keys[i]];
  received.set(body, { bytes, keys, values, edited: false });
  return body;
}

/**
 * A large body of declared length, copied into one buffer of that length as it arrives: the copy is
 * spread over the reads, where joining tens of MB of chunks at the end (raw-body's Buffer.concat)
 * holds the event loop for as long as it takes to write that memory. Fails as raw-body does (the
 * `type` the caller maps): more or fewer bytes than declared, or a client gone before the end.
 */
function readDeclared(req: IncomingMessage, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out = Buffer.allocUnsafe(length);
    let at = 0;
    const fail = (type: string) => {
      cleanup();
      reject(Object.assign(new Error(type), { type }));
    };
    const onData = (chunk: Buffer) => {
      if (at + chunk.length > length) return fail('request.size.invalid');
      chunk.copy(out, at);
      at += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      if (at === length) resolve(out);
      else reject(Object.assign(new Error('request.size.invalid'), { type: 'request.size.invalid' }));
    };
    const onClose = () => fail('request.aborted');
    const onError = () => fail('request.aborted');
    function cleanup() {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onError);
    }
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.once('error', onError);
  });
}

/**
 * A body that came whole with its headers (most small requests do): by the time a route reads it,
 * the HTTP parser has put all of it in the request's buffer. It is taken in one read, with its
 * memory budget held until the exchange ends, and without what a body still arriving needs (an idle
 * timer, listeners, raw-body's promise): that was a measurable part of every small request's CPU.
 * Null when the body is not all there yet, or already being read: the streaming path takes it.
 */
function takeBuffered(req: IncomingMessage, declared: number, policy: BodyPolicy | undefined, exchange: GatewayState['exchange'] | undefined): Buffer | null {
  // All `declared` bytes buffered is the whole body: the parser never passes more than Content-Length
  // (the parser's end of message may still be to come, after this tick's microtasks).
  if (!exchange || req.readableFlowing !== null || req.readableLength !== declared || declared === 0) return null;
  if (policy) {
    if (!policy.budget.tryTake(declared)) throw budgetExhausted();
    exchange.onEnd(() => policy.budget.give(declared));
  }
  const bytes = req.read(declared) as Buffer | null;
  // Flowing from here, so that the request still ends ('end') as one read through does.
  req.resume();
  // Node hands out what it buffered; anything else would mean the checks above were wrong.
  if (!bytes || bytes.length !== declared) throw invalidRequest('The request body could not be read.');
  return bytes;
}

/**
 * A large body, parsed in a worker (json-parser-pool.ts): the event loop gets its bytes back, its
 * small top-level members as values, and a DeferredJson for each large one, which the forwarding
 * path never needs to read (the bytes are forwarded; the token estimate and referenced ids come
 * with it). Code that reads whole requests (service-test) calls readWholeJson.
 */
async function parseOffLoop(bytes: Buffer, parser: JsonParserPool): Promise<JsonObject> {
  const parsed = await parser.parse(bytes);
  const body: JsonObject = {};
  const values = new Array<unknown>(parsed.keys.length);
  const deferredKeys: string[] = [];
  parsed.keys.forEach((key, i) => {
    const member = parsed.values[i];
    let value: unknown;
    if ('value' in member) value = member.value;
    else {
      value = new DeferredJson(key, member.deferred.bytes, member.deferred.estimatedTokens, member.deferred.references);
      deferredKeys.push(key);
    }
    values[i] = value;
    define(body, key, value);
  });
  received.set(body, { bytes: parsed.bytes, keys: parsed.keys, values, edited: false, scan: parsed.scan, deferred: deferredKeys.length > 0 ? { keys: deferredKeys, parser } : undefined });
  return body;
}

/** A member as JSON.parse makes one: a `__proto__` key is a member, not a prototype. */
function define(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * `body` with every member in hand: the same object for a body read whole; for a large one whose
 * members were left in the parser worker, a new object with them rebuilt on the event loop a bounded
 * piece at a time, each long string flattened in a turn of its own (materialize.ts). For code that
 * answers whole requests itself (service-test): neither object can be forwarded afterwards. With
 * `maxStringLength`, a body holding a longer string is refused as OpenAI refuses it
 * (string-length.ts).
 */
export async function readWholeJson(body: JsonObject, options: { maxStringLength?: number } = {}): Promise<JsonObject> {
  const maxStringLength = options.maxStringLength ?? null;
  const entry = received.get(body);
  if (!entry?.deferred) {
    // A string can be longer than the limit only in a body longer than it (one read on the event loop
    // when the offload size is set above it).
    if (maxStringLength !== null && entry && entry.bytes.length > maxStringLength) checkStringLengths(body, maxStringLength);
    return body;
  }
  // The bytes go to the worker for good (it frees them): a body read whole is answered here, never
  // forwarded, and holding its bytes until a garbage collection would double its memory.
  const bytes = entry.bytes;
  entry.bytes = Buffer.alloc(0);
  entry.consumed = true;
  const { members, rebuilt } = await entry.deferred.parser.materialize(bytes, entry.deferred.keys, maxStringLength);
  await flattenInTurns(rebuilt);
  const whole: JsonObject = {};
  for (const key of Object.keys(body)) {
    const value = body[key];
    define(whole, key, value instanceof DeferredJson ? members[value.key] : value);
  }
  return whole;
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
  if (entry?.consumed) throw new Error('a request body read whole (readWholeJson) cannot be forwarded: its bytes are gone');
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

/** The bytes' scan, or null when they must not be forwarded as they are (json-object.ts forwardableScan). */
function forwardable(entry: Received): ObjectScan | null {
  if (entry.scan === undefined) entry.scan = forwardableScan(entry.bytes, entry.keys, entry.values);
  return entry.scan;
}

function selfCheck(body: JsonObject, model: string | null, bytes: Buffer): void {
  const entry = received.get(body);
  if (entry?.deferred) return selfCheckMembers(body, entry);
  const expected: unknown = JSON.parse(serialised(body, model).toString('utf8'));
  // Through JSON.stringify once more, as the expected side went: -0 becomes 0 on both.
  const sent: unknown = JSON.parse(JSON.stringify(JSON.parse(bytes.toString('utf8'))));
  if (!isDeepStrictEqual(sent, expected)) throw new Error(SELF_CHECK_FAILED);
}

/**
 * A large body with members left in the parser worker: those cannot be changed here, and the
 * replaced ones are spliced from their new values, so each member kept as parsed is compared with
 * its text in the bytes (parsing the whole body here would be the very stall the worker avoids).
 */
function selfCheckMembers(body: JsonObject, entry: Received): void {
  const offsets = new Map(entry.scan!.members.map((member) => [keyOf(entry.bytes, member), member]));
  entry.keys.forEach((key, i) => {
    const value = entry.values[i];
    if (value instanceof DeferredJson || body[key] !== value) return;
    const member = offsets.get(key)!;
    const sent: unknown = JSON.parse(entry.bytes.toString('utf8', member.valueStart, member.end));
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(value)), sent)) throw new Error(SELF_CHECK_FAILED);
  });
}

const SELF_CHECK_FAILED = 'The bytes forwarded for a request body do not match the object: a change below its top level was made in place without markBodyEdited (see http/body.ts).';
