// Shared by the hostile suites: raw sockets for framing the HTTP clients refuse to send, event-loop
// delay and RSS figures for docs/reliability.md, and the log scan. Every secret a suite uses (API
// keys, upstream credentials) is registered here, every log line its gateways wrote is kept, and
// `scanLogs` searches them all, byte arrays and base64 decoded too: the suite fails on any hit.
import { connect } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { raw } from '../helpers/gateway.ts';

/** Raw bytes to a gateway; resolves with everything it sent back once it closes or `quietMs` pass without a byte. */
export function rawExchange(port: number, chunks: Array<string | Buffer>, options: { quietMs?: number; gapMs?: number; maxMs?: number } = {}): Promise<{ text: string; closed: boolean; ms: number }> {
  const { quietMs = 300, gapMs = 0, maxMs = 15_000 } = options;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let quiet: NodeJS.Timeout | null = null;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      if (quiet) clearTimeout(quiet);
      clearTimeout(cap);
      socket.destroy();
      resolve({ text: Buffer.concat(received).toString('latin1'), closed, ms: performance.now() - started });
    };
    const cap = setTimeout(() => finish(false), maxMs);
    const restartQuiet = () => {
      if (quiet) clearTimeout(quiet);
      quiet = setTimeout(() => finish(false), quietMs);
    };
    socket.on('data', (chunk) => {
      received.push(chunk);
      restartQuiet();
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) break;
        socket.write(chunk);
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
      }
      restartQuiet();
    });
  });
}

/** Status code and JSON body of the first response in a raw exchange. */
export function firstResponse(text: string): { status: number; json: any; head: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const split = text.indexOf('\r\n\r\n');
  const head = split === -1 ? text : text.slice(0, split);
  let body = split === -1 ? '' : text.slice(split + 4);
  if (/transfer-encoding: chunked/i.test(head)) {
    const size = parseInt(body, 16);
    body = body.slice(body.indexOf('\r\n') + 2, body.indexOf('\r\n') + 2 + size);
  } else {
    const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? body.length);
    body = body.slice(0, length);
  }
  let json: any = null;
  try {
    json = JSON.parse(Buffer.from(body, 'latin1').toString('utf8'));
  } catch {}
  return { status, json, head };
}

export function expectOpenAiError(json: any): void {
  const error = json?.error;
  if (!error || typeof error.message !== 'string' || typeof error.type !== 'string' || !('param' in error) || !('code' in error)) {
    throw new Error(`not an OpenAI error body: ${JSON.stringify(json)?.slice(0, 300)}`);
  }
}

/** Runs `work` while sampling this process's event-loop delay (the in-process gateway's loop). */
export async function withLoopDelay<T>(work: () => Promise<T>): Promise<{ result: T; maxDelayMs: number; p99DelayMs: number; ms: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  try {
    const result = await work();
    return { result, maxDelayMs: histogram.max / 1e6, p99DelayMs: histogram.percentile(99) / 1e6, ms: performance.now() - started };
  } finally {
    histogram.disable();
  }
}

/**
 * The longest the event loop was held while `work` ran (this process hosts the gateway). Timer
 * lateness alone (monitorEventLoopDelay) also counts the time the process waited for a core, which
 * on a loaded machine is most of it; so each gap between two timer turns is charged the CPU time
 * the event loop's thread burned in it (not the worker threads', which run beside it), and the
 * longest such gap is the stall.
 */
export async function maxStallMs(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let longest = 0;
  let last = process.threadCpuUsage();
  let running = true;
  const tick = () => {
    const now = process.threadCpuUsage();
    const burned = (now.user - last.user + now.system - last.system) / 1000;
    longest = Math.max(longest, burned);
    last = now;
    if (running) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  try {
    await work();
  } finally {
    running = false;
    histogram.disable();
  }
  // Wall-clock delay is the stricter measure, and the right one when the machine is idle.
  return Math.min(longest, histogram.max / 1e6);
}

/**
 * Runs one request while the gateway's /healthz is asked over and over (each must answer 200: it
 * answers all along), and measures the longest stall of this process's event loop (maxStallMs).
 */
export async function whileHealthChecked<T>(gateway: { url: string }, request: () => Promise<T>): Promise<{ result: T; stallMs: number; healthChecks: number }> {
  let result!: T;
  let healthChecks = 0;
  const stallMs = await maxStallMs(async () => {
    let done = false;
    const pending = request().finally(() => (done = true));
    while (!done) {
      expect((await raw(gateway, 'GET', '/healthz')).status).toBe(200);
      healthChecks++;
    }
    result = await pending;
  });
  return { result, stallMs, healthChecks };
}

export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

export const MB = 1024 * 1024;

// ---- the log scan ---------------------------------------------------------------------------

const secrets = new Set<string>();
const logSources: Array<() => string> = [];

/** A key or credential the suite uses: no log line may contain it. */
export function registerSecret(secret: string): string {
  secrets.add(secret);
  return secret;
}

/** A source of log text (a test gateway's logText, a child process's stdout). */
export function registerLogs(source: () => string): void {
  logSources.push(source);
}

/** Every string a log text holds, with byte arrays and base64 runs decoded. */
export function decodedViews(text: string): string[] {
  const views = [text];
  // Buffers logged by JSON.stringify: {"type":"Buffer","data":[80,79,83,...]}, or any long array of bytes.
  for (const match of text.matchAll(/\[(\d{1,3}(?:,\d{1,3}){7,})\]/g)) {
    const bytes = match[1].split(',').map(Number);
    if (bytes.every((b) => b < 256)) views.push(Buffer.from(bytes).toString('latin1'));
  }
  for (const match of text.matchAll(/[A-Za-z0-9+/]{16,}={0,2}/g)) views.push(Buffer.from(match[0], 'base64').toString('latin1'));
  for (const match of text.matchAll(/(?:[0-9a-f]{2}){12,}/g)) views.push(Buffer.from(match[0], 'hex').toString('latin1'));
  return views;
}

/** The secrets found in the given texts (all registered logs by default). */
export function scanLogs(texts: string[] = logSources.map((source) => source())): Array<{ secret: string; line: string }> {
  const hits: Array<{ secret: string; line: string }> = [];
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (!line) continue;
      const views = decodedViews(line);
      for (const secret of secrets) {
        if (views.some((view) => view.includes(secret))) hits.push({ secret: `${secret.slice(0, 6)}…`, line: line.slice(0, 200) });
      }
    }
  }
  return hits;
}

/** Total log bytes scanned, for the record. */
export function scannedBytes(): number {
  return logSources.reduce((sum, source) => sum + source().length, 0);
}
