// The ways the bench loads a proxy: autocannon at a fixed concurrency (as fast as it can go), an
// open-loop client at a fixed moderate rate that times each request and its first body chunk with
// sub-millisecond precision, and a closed loop of a fixed number of requests (the GC and allocation
// tools, which count per request rather than per second). Each connection (autocannon) or request
// (paced, closed loop) uses one of the bench keys in turn, so authentication looks keys up across
// the whole snapshot.
import autocannon from 'autocannon';
import { Agent, request } from 'node:http';
import { Agent as UndiciAgent, request as undiciRequest } from 'undici';
import { SseChecker } from './sse.ts';

export interface Target {
  name: string;
  origin: string;
}

export interface Load {
  path: string;
  body: Buffer;
  /** An SSE answer with this many content chunks, checked frame by frame by the paced client. */
  streamChunks?: number;
}

export interface ThroughputResult {
  rps: number;
  requests: number;
  /** Per-request latency (ms, raw samples of 2xx answers). */
  samples: number[];
  errors: number;
  non2xx: number;
  seconds: number;
}

/** autocannon's options for POSTing `load` from `connections` clients, each taking the next key. */
function keyedClients(target: Target, load: Load, options: { connections: number; keys: string[] }): autocannon.Options {
  let keyIndex = 0;
  const headers = { 'content-type': 'application/json' };
  return {
    url: `${target.origin}${load.path}`,
    method: 'POST',
    headers,
    body: load.body,
    connections: options.connections,
    setupClient: (client) => {
      client.setHeaders({ ...headers, authorization: `Bearer ${options.keys[keyIndex++ % options.keys.length]}` });
    },
  };
}

export async function throughput(target: Target, load: Load, options: { connections: number; durationS: number; keys: string[] }): Promise<ThroughputResult> {
  const samples: number[] = [];
  let instance!: autocannon.Instance;
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon({ ...keyedClients(target, load, options), duration: options.durationS }, (error, result) => (error ? reject(error) : resolve(result)));
  });
  instance.on('response', (_client, status, _bytes, responseTime) => {
    if (status >= 200 && status < 300) samples.push(responseTime);
  });
  const result = await finished;
  const ok = samples.length;
  return { rps: ok / result.duration, requests: ok, samples, errors: result.errors + result.timeouts, non2xx: result.non2xx, seconds: result.duration };
}

/**
 * A load that runs until stopped, as fast as `connections` clients go: counts what it got, so that a
 * caller can read answers (2xx) and failures at any moment and divide CPU by them window by window.
 */
export interface SustainedLoad {
  answered(): number;
  failed(): number;
  stop(): Promise<void>;
}

export function sustained(target: Target, load: Load, options: { connections: number; keys: string[] }): SustainedLoad {
  let answered = 0;
  let failed = 0;
  // Stopped by stop(); the duration only ends a load whose caller died. Its result is not wanted:
  // the counts below are read window by window.
  const instance = autocannon({ ...keyedClients(target, load, options), duration: 3600 }, () => {});
  const finished = new Promise<void>((resolve) => instance.once('done', () => resolve()));
  instance.on('response', (_client, status) => {
    if (status >= 200 && status < 300) answered++;
    else failed++;
  });
  instance.on('reqError', () => failed++);
  return {
    answered: () => answered,
    failed: () => failed,
    stop: async () => {
      instance.stop();
      await finished;
    },
  };
}

/**
 * A load that runs until stopped at `rate` requests a second (open loop: requests leave on schedule
 * whether or not earlier ones are answered), counted as they are answered. Below saturation every
 * gateway loaded this way serves the same requests, so their CPU per request compares at one operating
 * point instead of at whatever each one's saturation is.
 */
export function steady(target: Target, load: Load, options: { rate: number; keys: string[] }): SustainedLoad {
  const agent = new UndiciAgent({ connections: 256, pipelining: 1 });
  const url = `${target.origin}${load.path}`;
  let answered = 0;
  let failed = 0;
  let inFlight = 0;
  let issued = 0;
  let stopped = false;
  const one = async () => {
    inFlight++;
    try {
      const key = options.keys[issued % options.keys.length];
      const response = await undiciRequest(url, { method: 'POST', dispatcher: agent, body: load.body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
      await response.body.arrayBuffer();
      if (response.statusCode >= 200 && response.statusCode < 300) answered++;
      else failed++;
    } catch {
      failed++;
    } finally {
      inFlight--;
    }
  };
  const start = performance.now();
  const tick = setInterval(() => {
    const due = Math.floor(((performance.now() - start) / 1000) * options.rate);
    // A stalled target must not exhaust the runner: what cannot leave is not sent later in a burst.
    while (issued < due) {
      issued++;
      if (inFlight < 2000) void one();
      else failed++;
    }
  }, 1);
  return {
    answered: () => answered,
    failed: () => failed,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      clearInterval(tick);
      await agent.close();
    },
  };
}

export interface PacedResult {
  /** Whole exchange, request written → last byte (ms, raw samples). */
  latencies: number[];
  /** Request written → first body chunk (ms, raw samples). */
  firsts: number[];
  /** Streams: each content chunk from the upstream writing it to the client reading it (ms). */
  transits: number[];
  sent: number;
  failed: number;
  problems: string[];
}

/**
 * Open loop: requests leave on schedule whether or not earlier ones have finished, so a slow answer
 * shows in the latency instead of slowing the load (no coordinated omission).
 */
export async function paced(target: Target, load: Load, options: { rate: number; durationMs: number; warmupMs: number; keys: string[] }): Promise<PacedResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });
  const url = new URL(`${target.origin}${load.path}`);
  const latencies: number[] = [];
  const firsts: number[] = [];
  const transits: number[] = [];
  const problems: string[] = [];
  let failed = 0;
  let sent = 0;
  let inFlight = 0;
  let keyIndex = 0;

  const one = (record: boolean) =>
    new Promise<void>((resolve) => {
      inFlight++;
      const started = performance.now();
      let first = NaN;
      const checker = load.streamChunks !== undefined ? new SseChecker() : null;
      const fail = (why: string) => {
        if (record) {
          failed++;
          if (problems.length < 5) problems.push(why);
        }
      };
      const req = request(
        {
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': load.body.length, authorization: `Bearer ${options.keys[keyIndex++ % options.keys.length]}` },
        },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (text: string) => {
            if (Number.isNaN(first)) first = performance.now() - started;
            checker?.feed(text, Number(process.hrtime.bigint() / 1000n));
          });
          res.on('end', () => {
            inFlight--;
            const total = performance.now() - started;
            if (res.statusCode !== 200) fail(`status ${res.statusCode}`);
            else if (checker && checker.finish(load.streamChunks!).problems.length > 0) fail(checker.check.problems[0]);
            else if (record) {
              latencies.push(total);
              firsts.push(first);
              if (checker) for (const t of checker.transits) transits.push(t);
            }
            resolve();
          });
        },
      );
      req.on('error', (error) => {
        inFlight--;
        fail(error.message);
        resolve();
      });
      req.end(load.body);
    });

  const run = async (durationMs: number, record: boolean) => {
    const pending: Promise<void>[] = [];
    const start = performance.now();
    let issued = 0;
    while (true) {
      const elapsed = performance.now() - start;
      if (elapsed >= durationMs) break;
      const due = Math.floor((elapsed / 1000) * options.rate);
      // Never more than a few thousand outstanding: a stalled target must not exhaust the runner.
      while (issued < due && inFlight < 5000) {
        issued++;
        if (record) sent++;
        pending.push(one(record));
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await Promise.all(pending);
  };
  if (options.warmupMs > 0) await run(options.warmupMs, false);
  await run(options.durationMs, true);
  agent.destroy();
  return { latencies, firsts, transits, sent, failed, problems };
}

export interface StreamsResult {
  opened: number;
  complete: number;
  failed: number;
  /** Streams open at the same moment, at most (first byte seen, last byte not yet). */
  maxOpen: number;
  problems: string[];
  seconds: number;
  /** Each content chunk from the upstream writing it to the client reading it (ms). */
  transits: number[];
}

/** `count` streams at once, each on its own connection, each checked frame by frame. */
export async function concurrentStreams(target: Target, load: Load, options: { count: number; rampMs: number; keys: string[] }): Promise<StreamsResult> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const url = new URL(`${target.origin}${load.path}`);
  const problems: string[] = [];
  let open = 0;
  let maxOpen = 0;
  let complete = 0;
  let failed = 0;
  const transits: number[] = [];
  const started = performance.now();
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const checker = new SseChecker('fast');
      let counted = false;
      const fail = (why: string) => {
        failed++;
        if (problems.length < 5) problems.push(why);
      };
      const req = request(
        {
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': load.body.length, authorization: `Bearer ${options.keys[i % options.keys.length]}` },
        },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (text: string) => {
            if (!counted) {
              counted = true;
              maxOpen = Math.max(maxOpen, ++open);
            }
            checker.feed(text, Number(process.hrtime.bigint() / 1000n));
          });
          res.on('end', () => {
            if (counted) open--;
            const check = checker.finish(load.streamChunks!);
            if (res.statusCode !== 200) fail(`status ${res.statusCode}`);
            else if (check.problems.length > 0) fail(check.problems[0]);
            else complete++;
            for (const t of checker.transits) transits.push(t);
            resolve();
          });
        },
      );
      req.on('error', (error) => {
        fail(error.message);
        resolve();
      });
      req.end(load.body);
    });
  const all: Promise<void>[] = [];
  for (let i = 0; i < options.count; i++) {
    all.push(one(i));
    // Spread the opens over the ramp so the proxy accepts them as a busy server would.
    if (options.rampMs > 0 && i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, (options.rampMs * 50) / options.count));
  }
  await Promise.all(all);
  agent.destroy();
  return { opened: options.count, complete, failed, maxOpen, problems, seconds: (performance.now() - started) / 1000, transits };
}

/**
 * `count` requests over `connections` concurrent clients, each taking the next key, every answer read
 * whole; a status other than 200 throws (the figures per request would otherwise count errors).
 */
export async function closedLoop(url: string, load: Load, options: { count: number; connections: number; keys: string[]; name?: string }): Promise<void> {
  const agent = new UndiciAgent({ connections: options.connections });
  let sent = 0;
  try {
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (sent < options.count) {
          const key = options.keys[sent++ % options.keys.length];
          const response = await undiciRequest(url, { method: 'POST', dispatcher: agent, body: load.body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
          await response.body.arrayBuffer();
          if (response.statusCode !== 200) throw new Error(`${options.name ?? url}: status ${response.statusCode}`);
        }
      }),
    );
  } finally {
    await agent.close();
  }
}
