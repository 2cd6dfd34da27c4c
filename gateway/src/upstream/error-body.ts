// Reading an upstream's error answer (a 429, a 5xx, a 4xx to relay) without ever failing because of
// it: at most `limit` bytes are kept (the rest is dropped and the connection closed), and a body that
// stalls or breaks off gives what had arrived. The fallback loop must go on to the next target
// whatever the error body looks like.
import type { Readable } from 'node:stream';

/** A stalled error body is given up after this long (the upstream's idle timeout may be longer). */
const ERROR_BODY_MS = 5000;

export function readErrorText(body: Readable, limit: number, timeoutMs = ERROR_BODY_MS): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (complete: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      body.off('data', onData);
      if (!complete) body.destroy();
      resolve(Buffer.concat(chunks, size).toString('utf8'));
    };
    const onData = (chunk: Buffer) => {
      const room = limit - size;
      if (chunk.length >= room) {
        chunks.push(chunk.subarray(0, room));
        size = limit;
        return finish(false);
      }
      chunks.push(chunk);
      size += chunk.length;
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    timer.unref();
    body.on('data', onData);
    body.once('end', () => finish(true));
    body.once('error', () => finish(false));
    body.once('close', () => finish(false));
  });
}
