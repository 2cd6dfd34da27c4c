// Tools for the proxy suites: waiting on conditions, generated multipart bodies too big to hold
// (sent over raw HTTP, hashed as they are produced), the spool directory, and live-memory sampling.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * POSTs raw JSON bytes with node:http, which writes the Buffer as it is (fetch copies its body
 * first: a copy of 50 MB in the test's own process would stall it); the answer's status, headers and
 * JSON (null when it is not JSON). An error after the answer has begun (a gateway that answered 503
 * before the upload was through may close the connection under it) is not a failure.
 */
export function postBytes(url: string, key: string, body: Buffer): Promise<{ status: number; headers: Headers; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        let json: any = null;
        try {
          json = JSON.parse(Buffer.concat(chunks).toString());
        } catch {}
        resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), json });
      });
      res.on('error', reject);
    });
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', (error) => (answered ? undefined : reject(error)));
    req.end(body);
  });
}

/** Polls a condition until it holds; fails with a reason after `ms` instead of hanging. */
export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sha256 = (bytes: Buffer | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

export async function spoolEntries(gw: { dir: string }): Promise<string[]> {
  return readdir(path.join(gw.dir, 'data', 'spool')).catch(() => []);
}

export interface GeneratedUpload {
  /** Hash and size of the file part's content, computed while it was generated. */
  sha256(): string;
  fileBytes: number;
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
}

/**
 * POSTs a multipart form whose file part (`fileBytes` of a deterministic pattern) is generated chunk
 * by chunk, so the test process never holds it. Fields follow the file, as they may from any client:
 * the gateway cannot know the model until the whole file has passed.
 */
export async function postGeneratedForm(url: string, key: string, fileBytes: number, fieldsAfter: Record<string, string>, options: { declareLength?: boolean } = {}): Promise<GeneratedUpload> {
  const boundary = `----tollgate-test-${Date.now()}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
  const tail = Buffer.from(`\r\n${Object.entries(fieldsAfter).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('')}--${boundary}--\r\n`);
  const hash = createHash('sha256');
  const CHUNK = 64 * 1024;
  async function* body() {
    yield head;
    for (let offset = 0, index = 0; offset < fileBytes; offset += CHUNK, index++) {
      const chunk = Buffer.alloc(Math.min(CHUNK, fileBytes - offset), index % 251);
      hash.update(chunk);
      yield chunk;
    }
    yield tail;
  }
  const headers: Record<string, string | number> = { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` };
  if (options.declareLength !== false) headers['content-length'] = head.length + fileBytes + tail.length;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: 'POST', headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ sha256: () => hash.digest('hex'), fileBytes, status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // A gateway that refuses the upload early (413) may close before the body is through: not an error once it answered.
    req.on('error', (error) => (answered ? undefined : reject(error)));
    Readable.from(body()).pipe(req);
  });
}

/**
 * Samples the live memory (JS heap + Buffers, after a full collection) every 100 ms while `work`
 * runs, and returns the peak growth over the level before it started. Live memory, not RSS: RSS
 * also counts garbage not yet collected and what the allocator keeps after a free, which for a
 * stream of 64 KB chunks grows with the bytes that passed, not with what was held at once.
 */
export async function peakLiveMemoryGrowth<T>(work: () => Promise<T>): Promise<{ result: T; peakBytes: number }> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const live = () => {
    // Twice: Buffers' memory is released by a sweep that may still be running after the first.
    gc();
    gc();
    const usage = process.memoryUsage();
    return usage.heapUsed + usage.arrayBuffers;
  };
  const base = live();
  let peak = 0;
  // Each sample is two full collections of this whole process (test runner, client, gateway, fake
  // upstream): on a busy machine they take long enough that sampling every 100 ms would leave the
  // work no time to run. The pause after a sample is four times what it took, so sampling never
  // takes more than a fifth of the time, and at least 100 ms.
  let sampler: NodeJS.Timeout | null = null;
  const sample = () => {
    const started = performance.now();
    peak = Math.max(peak, live() - base);
    sampler = setTimeout(sample, Math.max(100, 4 * (performance.now() - started)));
  };
  sampler = setTimeout(sample, 100);
  try {
    const result = await work();
    peak = Math.max(peak, live() - base);
    return { result, peakBytes: peak };
  } finally {
    if (sampler) clearTimeout(sampler);
  }
}
