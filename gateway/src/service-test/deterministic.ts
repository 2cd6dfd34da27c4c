// service-test must answer the same request the same way, so every "random" choice comes from a
// seeded generator keyed by the request's content.
import { createHash } from 'node:crypto';

/** A 32-bit seed from any string (first four bytes of its SHA-256). */
export function seedOf(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32LE(0);
}

/** mulberry32: tiny, fast, good enough for test data; returns floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An id with a prefix (`chatcmpl-`, `resp_`, `file-` …) derived from content, stable across runs. */
export function stableId(prefix: string, content: string, length = 24): string {
  return prefix + createHash('sha256').update(content).digest('base64url').replace(/[-_]/g, '').slice(0, length);
}
