// Moving a large parsed JSON value from the parser worker to the event loop without one long stall.
// Receiving a message is a synchronous structured-clone deserialisation on the receiving thread, as
// slow as parsing the same value; so the worker cuts the value into pieces (a string in slices, an
// array or object into runs of members), sends them in batches of a bounded size, and the event loop
// applies one batch per message. A string rebuilt from slices is a rope (V8 concatenation): the
// first read of it flattens it, allocating and touching its whole length at once, which on a machine
// with slow page faults holds the loop for a long time. So the rebuilt strings are listed, for the
// caller to check their lengths without reading them, then flatten each in a turn of its own.

/** A path from the members' holder: the top-level key, then keys and array indexes. */
export type PiecePath = Array<string | number>;

/**
 * `set`: the value at the path; `text`: a slice appended to the string at the path; `push`: elements
 * appended to the array at the path; `assign`: members added to the object at the path.
 */
export type Piece = [PiecePath, 'set', unknown] | [PiecePath, 'text', string] | [PiecePath, 'push', unknown[]] | [PiecePath, 'assign', Array<[string, unknown]>];

/** The size of a value's JSON text, roughly (strings by their length): what its clone costs. */
function sizeOf(value: unknown, sizes: Map<object, number>): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object') return 8;
  const known = sizes.get(value);
  if (known !== undefined) return known;
  let size = 2;
  if (Array.isArray(value)) for (const element of value) size += 1 + sizeOf(element, sizes);
  else for (const key in value) size += key.length + 4 + sizeOf((value as Record<string, unknown>)[key], sizes);
  sizes.set(value, size);
  return size;
}

/**
 * The pieces that rebuild `members` under an empty holder object, in batches of about `batchBytes`.
 * Depth is bounded by the body checks (json-object.ts), so the recursion is too.
 */
export function* piecesOf(members: Array<[string, unknown]>, batchBytes: number): Generator<Piece[]> {
  const sizes = new Map<object, number>();
  let batch: Piece[] = [];
  let batchSize = 0;
  function* add(piece: Piece, size: number): Generator<Piece[]> {
    batch.push(piece);
    batchSize += size;
    if (batchSize >= batchBytes) {
      yield batch;
      batch = [];
      batchSize = 0;
    }
  }
  function* emit(path: PiecePath, value: unknown): Generator<Piece[]> {
    const size = sizeOf(value, sizes);
    if (size <= batchBytes) return yield* add([path, 'set', value], size);
    if (typeof value === 'string') {
      yield* add([path, 'set', value.slice(0, batchBytes)], batchBytes);
      for (let from = batchBytes; from < value.length; from += batchBytes) yield* add([path, 'text', value.slice(from, from + batchBytes)], batchBytes);
      return;
    }
    const isArray = Array.isArray(value);
    yield* add([path, 'set', isArray ? [] : {}], 2);
    // Runs of small members go together; a large one is cut up on its own, at its place in the order.
    let run: unknown[] = [];
    let runSize = 0;
    function* flush(): Generator<Piece[]> {
      if (run.length === 0) return;
      const piece: Piece = isArray ? [path, 'push', run] : [path, 'assign', run as Array<[string, unknown]>];
      run = [];
      const size = runSize;
      runSize = 0;
      yield* add(piece, size);
    }
    const entries: Iterable<[string | number, unknown]> = isArray ? (value as unknown[]).entries() : Object.entries(value as object);
    for (const [key, element] of entries) {
      const elementSize = sizeOf(element, sizes);
      if (elementSize > batchBytes) {
        yield* flush();
        yield* emit([...path, key], element);
        continue;
      }
      run.push(isArray ? element : [key, element]);
      runSize += elementSize;
      if (runSize >= batchBytes) yield* flush();
    }
    yield* flush();
  }
  for (const [key, value] of members) yield* emit([key], value);
  if (batch.length > 0) yield batch;
}

/** Own data properties, as JSON.parse makes them: a `__proto__` key is a member, not a prototype. */
function define(target: object, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function parentOf(holder: Record<string, unknown>, path: PiecePath): Record<string | number, unknown> {
  let node = holder as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) node = node[path[i]] as Record<string | number, unknown>;
  return node;
}

/** Where a string rebuilt from slices is held: its parent object or array, and its key there. */
export interface RebuiltString {
  parent: Record<string | number, unknown>;
  key: string | number;
  path: PiecePath;
}

/**
 * Applies one batch of pieces to the holder object. Each string rebuilt from slices is added to
 * `rebuilt` once (its slices come one after another).
 */
export function applyPieces(holder: Record<string, unknown>, pieces: Piece[], rebuilt: RebuiltString[] = []): void {
  for (const [path, kind, value] of pieces) {
    const parent = parentOf(holder, path);
    const key = path[path.length - 1];
    if (kind === 'set') define(parent, key, value);
    else if (kind === 'text') {
      const last = rebuilt[rebuilt.length - 1];
      if (last?.parent !== parent || last.key !== key) rebuilt.push({ parent, key, path });
      parent[key] = (parent[key] as string) + value;
    }
    else if (kind === 'push') {
      const target = parent[key] as unknown[];
      for (const element of value) target.push(element);
    } else {
      const target = parent[key] as object;
      for (const [name, element] of value) define(target, name, element);
    }
  }
}

/**
 * Flattens each rebuilt string in a turn of the event loop of its own: reading a rope makes V8 copy it
 * into one new string in place, and doing that for every large string of a body in the one turn
 * that first reads them would hold the loop for all of them together.
 */
export async function flattenInTurns(rebuilt: RebuiltString[]): Promise<void> {
  for (const { parent, key } of rebuilt) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    (parent[key] as string).charCodeAt(0);
  }
}
