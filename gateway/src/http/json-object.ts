// The checks every JSON request body passes, wherever it is parsed: on the event loop for a small
// body (body.ts), in the parser worker for a large one (json-worker.ts). Pure: no I/O, no state.
import { isUtf8 } from 'node:buffer';
import { invalidRequest } from './errors.ts';
import { countKeys, exceedsDepth, scanObject, type ObjectScan } from './json-splice.ts';

/**
 * Top-level members a JSON body may have (docs/configuration.md). OpenAI's largest request objects
 * have a few dozen parameters; a body of tens of thousands of keys is only ever an attack on the
 * per-key work done for forwarding, and is refused with a 400.
 */
export const MAX_TOP_LEVEL_KEYS = 1000;

/** Deeper JSON is refused with 400: re-serialising it (and any recursive walk) would overflow the stack. */
export const MAX_JSON_DEPTH = 128;

/** The body as JSON.parse reads it, checked to be an object within the depth and key limits; throws ApiError (400). */
export function parseJsonObject(bytes: Buffer): { body: Record<string, unknown>; keys: string[] } {
  const text = bytes.toString('utf8');
  // The same whitespace as String#trim, found without copying the text.
  if (!/\S/.test(text)) throw invalidRequest('The request body is empty; send a JSON object.', null, 'invalid_json');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidRequest(`We could not parse the JSON body of your request: ${(error as Error).message}`, null, 'invalid_json');
  }
  if (exceedsDepth(bytes, MAX_JSON_DEPTH)) {
    throw invalidRequest(`The JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, null, 'json_too_deep');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  }
  const body = value as Record<string, unknown>;
  const keys = Object.keys(body);
  if (keys.length > MAX_TOP_LEVEL_KEYS) {
    throw invalidRequest(`The request body has ${keys.length} top-level members; at most ${MAX_TOP_LEVEL_KEYS} are accepted.`, null, 'too_many_parameters');
  }
  return { body, keys };
}

/**
 * The bytes' top-level scan, when they mean to any JSON parser exactly what JSON.parse made of them;
 * null otherwise, and the object is serialised again, which settles every case below:
 * - invalid UTF-8: the decoder replaced it, a strict upstream would refuse it;
 * - a key repeated at any depth: JSON.parse keeps the last, other parsers the first, and the gateway
 *   must not check one value (a model, a file id) while the upstream acts on another;
 * - a key written with an escape: V8's JSON.parse can misread one (after `{"x":1,"a\\":2}` it reads
 *   `{"x":1,"a\u0041":2}` with the key `a\` instead of `aA`: nodejs/node#63785, open, and present in
 *   Node 24.21), so the gateway and the upstream could again see different requests. Clients
 *   practically never escape keys.
 */
export function forwardableScan(bytes: Buffer, keys: readonly string[], values: readonly unknown[]): ObjectScan | null {
  if (!isUtf8(bytes)) return null;
  const scan = scanObject(bytes);
  if (scan.escapedKeys) return null;
  let count = keys.length;
  for (const value of values) count += countKeys(value);
  return scan.keyCount === count ? scan : null;
}
