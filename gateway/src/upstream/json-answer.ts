// Reading the little the gateway needs from a JSON answer (its usage, its model) without parsing the
// whole of it. OpenAI writes `usage` as the last member of the top-level object, after the bulk of the
// answer (an embeddings answer is 30 KB of floats before 60 bytes of usage), so the end of the object
// is parsed on its own, and only when it provably is the end of the top-level object.

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const COMMA = 0x2c;

export interface ObjectTail {
  /** Offset of the first member parsed (the quote of its key). */
  start: number;
  /** Offset just past the closing brace of the top-level object. */
  end: number;
  /** The members from `start` to the end of the object. */
  members: Record<string, unknown>;
}

/**
 * The members of the top-level object from the earliest of the last occurrences of `keys` to its
 * closing brace, parsed; null when that cannot be shown to be a run of top-level members (then the
 * caller parses the whole). Every key that occurs at all must be among the parsed members: a key
 * found only nested (or only before the tail) gives null. Keys are searched as written, `"usage"`;
 * a key spelled with escapes (`"\u0075sage"`) is not recognised.
 *
 * Why this shows the tail is top level: a raw `"` never occurs inside a JSON string (it is escaped
 * there), so a match of `"key"` is a token of the document. If it sits k levels below the top, the
 * bytes from it to the end close k + 1 containers, and `{` + those bytes cannot parse. So when they
 * parse, the match is a member of the top-level object, and everything from it to the end is valid.
 */
export function parseObjectTail(bytes: Buffer, keys: readonly string[]): ObjectTail | null {
  let first = 0;
  while (first < bytes.length && isSpace(bytes[first])) first++;
  let last = bytes.length - 1;
  while (last > first && isSpace(bytes[last])) last--;
  if (bytes[first] !== OPEN || bytes[last] !== CLOSE || last === first) return null;
  let start = -1;
  const found: string[] = [];
  // The keys are expected near the end: search the last few KB first (a backward search is not cheap).
  const near = Math.max(first, last - 4096);
  for (const key of keys) {
    const needle = `"${key}"`;
    let at = bytes.subarray(near, last).lastIndexOf(needle);
    at = at === -1 ? (near > first ? bytes.lastIndexOf(needle, near + needle.length) : -1) : near + at;
    if (at <= first) continue;
    found.push(key);
    if (start === -1 || at < start) start = at;
  }
  if (start === -1) return null;
  let before = start - 1;
  while (before > first && isSpace(bytes[before])) before--;
  if (bytes[before] !== COMMA && bytes[before] !== OPEN) return null;
  let members: unknown;
  try {
    members = JSON.parse(`{${bytes.toString('utf8', start, last + 1)}`);
  } catch {
    return null;
  }
  const object = members as Record<string, unknown>;
  if (!found.every((key) => Object.hasOwn(object, key))) return null;
  return { start, end: last + 1, members: object };
}

/** The answer with its tail's members written anew (after a change to them), the bytes before kept as they are. */
export function withTail(bytes: Buffer, tail: ObjectTail): Buffer {
  return Buffer.concat([bytes.subarray(0, tail.start), Buffer.from(JSON.stringify(tail.members).slice(1))]);
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
