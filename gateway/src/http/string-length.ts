// OpenAI refuses a request any of whose strings is longer than 10 MiB characters (400
// `string_above_max_length`, naming the parameter), whatever the total size allowed. Code that
// answers as OpenAI does (service-test) refuses the same: it also keeps a string it must read whole
// small enough to copy in one turn of the event loop (materialize.ts). Media sent inline (a Data URL
// image, base64 audio or file data) is bounded by the request's size alone, as the service promises
// (a vision request up to 50 MB). Pure, so that the JSON parser worker checks the members it keeps
// before sending any of them.
import { paramName } from './body-references.ts';
import { ApiError } from './errors.ts';

export const OPENAI_MAX_STRING_LENGTH = 10_485_760;

/** The keys that hold inline media: `image_url.url` and Responses' `image_url`, `file_data`, `input_audio.data`. */
const MEDIA_KEYS = new Set(['url', 'image_url', 'file_data', 'data']);

/** Throws OpenAI's error for the first string in `members` longer than `max` characters. */
export function checkStringLengths(members: Record<string, unknown>, max: number): void {
  const path: Array<string | number> = [];
  for (const key of Object.keys(members)) {
    path.push(key);
    visit(members[key], path, max);
    path.pop();
  }
}

/** The body checks (json-object.ts) bound the depth, and so this recursion. */
function visit(node: unknown, path: Array<string | number>, max: number): void {
  if (typeof node === 'string') {
    if (node.length > max && !MEDIA_KEYS.has(String(path[path.length - 1]))) throw stringTooLong(path, node.length, max);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      path.push(i);
      visit(node[i], path, max);
      path.pop();
    }
    return;
  }
  for (const key of Object.keys(node)) {
    path.push(key);
    visit((node as Record<string, unknown>)[key], path, max);
    path.pop();
  }
}

function stringTooLong(path: Array<string | number>, length: number, max: number): ApiError {
  const name = paramName(path);
  return new ApiError(400, 'string_above_max_length', `Invalid '${name}': string too long. Expected a string with maximum length ${max}, but got a string with length ${length} instead.`, { param: name });
}
