// Random ids for service-test's answers (`chatcmpl-…`, `cmpl-…`, `modr-…`), drawn from a pool of
// random bytes refilled a few KB at a time: one randomBytes() call per answer was the single largest
// function in a service-test chat's profile (a system call for 15 bytes). randomUUID() pools its
// entropy the same way.
import { randomFillSync } from 'node:crypto';

const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

function randomSlice(bytes: number): Buffer {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const slice = pool.subarray(offset, offset + bytes);
  offset += bytes;
  return slice;
}

/** `prefix` and `bytes` random bytes as letters and digits (base64url with `-` and `_` as `x`), as OpenAI's ids look. */
export function randomId(prefix: string, bytes: number): string {
  return prefix + randomSlice(bytes).toString('base64url').replace(/[-_]/g, 'x');
}

/** `prefix` and `bytes` random bytes in hex. */
export function randomHexId(prefix: string, bytes: number): string {
  return prefix + randomSlice(bytes).toString('hex');
}
