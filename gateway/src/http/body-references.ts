// The ids a request body points at (batch input, attachments, tool resources), wherever they sit:
// each must be checked to be the caller's before the request goes upstream (routes/upstream-objects.ts).
// Pure, so that the JSON parser worker can run it on the members it keeps (deferred-json.ts).
import type { RoutedKind } from '../storage/routed-ids.ts';
import { DeferredJson, type Reference } from './deferred-json.ts';

export type { Reference } from './deferred-json.ts';

const REFERENCE_KEYS: Record<string, RoutedKind> = { file_id: 'file', input_file_id: 'file', assistant_id: 'assistant', thread_id: 'thread', vector_store_id: 'vector_store' };
const REFERENCE_LIST_KEYS: Record<string, RoutedKind> = { file_ids: 'file', vector_store_ids: 'vector_store' };
/** Far deeper than any OpenAI request nests an id; keeps a hostile body from exhausting the stack. */
const MAX_DEPTH = 64;

/** Every id a request body points at, in the order of the body; a deferred member contributes the ids the worker found in it. */
export function referencesIn(body: unknown): Reference[] {
  const found: Reference[] = [];
  collectReferences(body, [], found);
  return found;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Walks the body with its path as a stack of segments, joined into a parameter name only for an id
 * found: the walk runs on every chat and Responses request, and building every node's path was most
 * of what it allocated.
 */
function collectReferences(node: unknown, path: Array<string | number>, found: Reference[]): void {
  if (path.length > MAX_DEPTH) return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      path.push(i);
      collectReferences(node[i], path, found);
      path.pop();
    }
    return;
  }
  if (!isObject(node)) return;
  if (node instanceof DeferredJson) {
    found.push(...node.references);
    return;
  }
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue;
    const value = node[key];
    if (typeof value === 'string' && Object.hasOwn(REFERENCE_KEYS, key)) found.push({ param: paramOf(path, key), id: value, kind: REFERENCE_KEYS[key] });
    else if (Array.isArray(value) && Object.hasOwn(REFERENCE_LIST_KEYS, key)) {
      value.forEach((id, i) => typeof id === 'string' && found.push({ param: `${paramOf(path, key)}[${i}]`, id, kind: REFERENCE_LIST_KEYS[key] }));
    } else if (typeof value === 'object' && value !== null) {
      path.push(key);
      collectReferences(value, path, found);
      path.pop();
    }
  }
}

/** `messages[0].content[1].file.file_id`, as OpenAI names a nested parameter. */
export function paramName(path: Array<string | number>): string {
  let param = '';
  for (const segment of path) param += typeof segment === 'number' ? `[${segment}]` : param ? `.${segment}` : segment;
  return param;
}

function paramOf(path: Array<string | number>, key: string): string {
  const param = paramName(path);
  return param ? `${param}.${key}` : key;
}
