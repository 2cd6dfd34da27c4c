// Edits to the top level of a JSON object text without parsing or re-serialising its values: a 5 MB
// image in a chat request is copied, not decoded and encoded again, when the gateway renames the
// model or adds `stream_options`. The scanner assumes text that JSON.parse has accepted; it finds
// where each top-level value starts and ends, jumping over strings with indexOf('"'), counts the
// keys at every depth so the caller can tell that the text has no duplicate keys, and notes whether
// any key is written with an escape.

export interface Member {
  /** Offset of the key's opening quote. */
  start: number;
  /** Offset of the key's closing quote (the key is decoded only when a splice needs it). */
  keyEnd: number;
  /** Offset of the value's first byte. */
  valueStart: number;
  /** Offset just past the value's last byte. */
  end: number;
}

export interface ObjectScan {
  /** The top-level members, in the order of the text. */
  members: Member[];
  /** Keys at every depth: fewer keys in the parsed object means the text repeats a key somewhere. */
  keyCount: number;
  /** Whether a key at any depth is written with an escape (`"mo\u0064el"`, `"a\\b"`). */
  escapedKeys: boolean;
}

/** Top-level keys to replace (with a JSON text) or remove (undefined); keys not in the text are appended. */
export type MemberEdits = ReadonlyMap<string, string | undefined>;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** A short string is cheaper to walk in JS than to search with a native call. */
const WALK_BEFORE_SEARCH = 32;
/** This many escaped quotes in one string and the search gives way to a walk (a string of `\"`s stays linear). */
const ESCAPED_QUOTES_BEFORE_WALK = 16;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Scans a JSON object text that JSON.parse accepted (surrounding whitespace allowed). */
export function scanObject(bytes: Uint8Array): ObjectScan {
  const members: Member[] = [];
  let keyCount = 0;
  let escapedKeys = false;
  let i = 0;
  while (isWhitespace(bytes[i])) i++;
  if (bytes[i] !== OPEN_BRACE) throw new Error('scanObject: the text is not a JSON object');
  let depth = 1;
  let member: Member | null = null;
  let last = i;
  i++;
  const length = bytes.length;
  while (i < length) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      const close = stringEnd(bytes, i);
      let next = close + 1;
      while (isWhitespace(bytes[next])) next++;
      if (bytes[next] === COLON) {
        keyCount++;
        if (!escapedKeys && includesBackslash(bytes, i + 1, close)) escapedKeys = true;
        if (depth === 1) {
          let valueStart = next + 1;
          while (isWhitespace(bytes[valueStart])) valueStart++;
          member = { start: i, keyEnd: close, valueStart, end: -1 };
          members.push(member);
          i = valueStart;
        } else {
          i = next + 1;
        }
        continue;
      }
      last = close;
      i = next;
      continue;
    }
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      if (--depth === 0) {
        if (member) member.end = last + 1;
        return { members, keyCount, escapedKeys };
      }
    } else if (byte === COMMA) {
      if (depth === 1 && member) {
        member.end = last + 1;
        member = null;
      }
    } else if (isWhitespace(byte)) {
      i++;
      continue;
    }
    last = i;
    i++;
  }
  throw new Error('scanObject: the JSON object text is not closed');
}

/** Offset of the quote that closes the string opened at `open`. */
function stringEnd(bytes: Uint8Array, open: number): number {
  const walkUntil = Math.min(open + 1 + WALK_BEFORE_SEARCH, bytes.length);
  let i = open + 1;
  for (; i < walkUntil; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) return i;
    if (byte === BACKSLASH) i++;
  }
  // i may sit just past an escaping backslash's escaped byte: resume from a clean position.
  let escapedQuotes = 0;
  for (;;) {
    const quote = (bytes as Buffer).indexOf(QUOTE, i);
    if (quote === -1) throw new Error('scanObject: a string is not closed');
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    i = quote + 1;
    if (++escapedQuotes === ESCAPED_QUOTES_BEFORE_WALK) return walkToStringEnd(bytes, i);
  }
}

function includesBackslash(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] === BACKSLASH) return true;
  return false;
}

/** From a position outside any escape sequence, byte by byte. */
function walkToStringEnd(bytes: Uint8Array, from: number): number {
  for (let i = from; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) return i;
    if (byte === BACKSLASH) i++;
  }
  throw new Error('scanObject: a string is not closed');
}

/** The member's key, escapes resolved. */
export function keyOf(bytes: Buffer, member: Member): string {
  for (let i = member.start + 1; i < member.keyEnd; i++) {
    if (bytes[i] === BACKSLASH) return JSON.parse(bytes.toString('utf8', member.start, member.keyEnd + 1));
  }
  return bytes.toString('utf8', member.start + 1, member.keyEnd);
}

const OPEN = Buffer.from('{');
const CLOSE = Buffer.from('}');
const SEPARATOR = Buffer.from(',');
const KEY_END = Buffer.from(':');

/**
 * The object text with the edits applied: replaced values in place, removed members dropped,
 * new keys appended, every other member copied byte for byte. The scan must be of these bytes and
 * must not have found a duplicate key (the edit would apply to one occurrence only).
 */
export function spliceMembers(bytes: Buffer, scan: ObjectScan, edits: MemberEdits): Buffer {
  const parts: Buffer[] = [OPEN];
  const add = (...pieces: Buffer[]) => {
    if (parts.length > 1) parts.push(SEPARATOR);
    parts.push(...pieces);
  };
  const seen = new Set<string>();
  for (const member of scan.members) {
    const key = keyOf(bytes, member);
    seen.add(key);
    if (!edits.has(key)) add(bytes.subarray(member.start, member.end));
    else {
      const value = edits.get(key);
      if (value !== undefined) add(bytes.subarray(member.start, member.valueStart), Buffer.from(value));
    }
  }
  for (const [key, value] of edits) {
    if (!seen.has(key) && value !== undefined) add(Buffer.from(JSON.stringify(key)), KEY_END, Buffer.from(value));
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/** Keys in a parsed JSON value at every depth, without recursion (a deeply nested body must not overflow the stack). */
export function countKeys(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== 'object' || item === null) continue;
    if (Array.isArray(item)) {
      for (const element of item) if (typeof element === 'object' && element !== null) stack.push(element);
      continue;
    }
    for (const key in item) {
      count++;
      const element = (item as Record<string, unknown>)[key];
      if (typeof element === 'object' && element !== null) stack.push(element);
    }
  }
  return count;
}

/**
 * Whether a JSON text that JSON.parse accepted nests arrays and objects deeper than `limit`: one pass,
 * strings jumped over as scanObject does, no recursion.
 */
export function exceedsDepth(bytes: Uint8Array, limit: number): boolean {
  const length = bytes.length;
  if (length <= limit) return false;
  let depth = 0;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) i = stringEnd(bytes, i);
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}
