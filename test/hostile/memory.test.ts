// Memory as a whole, against a real gateway process (issue 11, item 9): fifty concurrent 40 MB JSON
// uploads are held to the body budget (the rest answered 503 with Retry-After), and afterwards the
// process's RSS comes back to its baseline: nothing of the load is kept, neither by the event loop
// nor by the JSON parser threads. The wait is on the condition (RSS polled), never a sleep. Both RSS
// figures are read after full collections (asked for through the gateway's inspector): what is
// measured is what the gateway keeps, not when V8 next decides to collect. Left to itself, V8 kept up
// to some 270 MB of finished uploads' strings in the main thread's large-object space for more than
// 30 s in some runs (nodejs_heap_size_used_bytes), and the test failed on V8's timing, not on a leak.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, newKey, plan, toYaml } from '../helpers/gateway.ts';
import { connectInspector, type Inspector } from '../helpers/inspector.ts';
import { scrape } from '../helpers/metrics.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { postBytes } from '../helpers/proxy-tools.ts';
import { waitFor } from '../helpers/wait.ts';
import { MB, registerLogs, registerSecret, rssOf, scanLogs } from './harness.ts';

const key = newKey('k', 'acme');
registerSecret(key.key);
let dir: string;
let gateway: GatewayProcess;
let inspector: Inspector;

/**
 * How far above its baseline RSS may stay once the load is over (docs/reliability.md): the load's
 * peak is some 250–530 MB above it. What stays of it after full collections is what the allocator
 * keeps of its arenas, which varies from run to run, and about 230 MB with the idle parser threads
 * never stopped.
 */
const RSS_MARGIN = 128 * MB;
/**
 * How far the main thread's live JavaScript memory (V8 heap in use plus external memory: Buffers),
 * read after a full collection, may stay above its baseline: it is exact where RSS is not, so a
 * finished upload kept by the gateway (40 MB each) shows here even when RSS hides it in the
 * allocator's noise.
 */
const LIVE_MARGIN = 16 * MB;
/**
 * How long it may take to get there: generous for a loaded machine (it takes about 5 s: parser
 * threads stop after that long without work). Left to garbage collection alone, an idle process
 * took about a minute.
 */
const SETTLE_DEADLINE_MS = 30_000;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-memory-'));
  const configFile = path.join(dir, 'tollgate.yaml');
  await writeFile(configFile, toYaml([plan('pro', ['service-test'], { concurrentRequests: 100 }), account('acme', 'pro'), apiKey(key)]));
  gateway = await startGatewayProcess(configFile, { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --inspect=127.0.0.1:0`.trim() });
  if (!gateway.inspectorURL) throw new Error('the gateway started without its inspector');
  inspector = await connectInspector(gateway.inspectorURL);
  registerLogs(() => gateway.logs.map((line) => JSON.stringify(line)).join('\n'));
});
afterAll(async () => {
  inspector?.close();
  await gateway?.kill();
  await rm(dir, { recursive: true, force: true });
});

/** The same Buffer for every request: the client holds 40 MB, not 2 GB. */
const post = (body: Buffer) => postBytes(`${gateway.url}/v1/chat/completions`, key.key, body);

/** The main thread's live JavaScript memory after a full collection, as the gateway's /metrics reports it. */
async function liveMemory(): Promise<number> {
  await inspector.collectGarbage();
  const value = await scrape(`${gateway.metricsURL}/metrics`);
  return value('nodejs_heap_size_used_bytes') + value('nodejs_external_memory_bytes');
}

/** RSS once it holds still: samples 200 ms apart, each after a full collection, until five in a row lie within 2 MB. */
async function settledRss(pid: number): Promise<number> {
  const samples: number[] = [];
  await waitFor(
    async () => {
      await inspector.collectGarbage();
      samples.push(rssOf(pid));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const last = samples.slice(-5);
      return last.length === 5 && Math.max(...last) - Math.min(...last) < 2 * MB;
    },
    30_000,
    'RSS to settle',
  );
  return samples.at(-1)!;
}

describe('memory after load', () => {
  it('fifty concurrent 40 MB uploads: bounded by the budget while they run, RSS back at its baseline after', async () => {
    const pid = gateway.child.pid!;
    // 40 MB in four messages: one string may be at most 10 MiB characters, as at OpenAI.
    const content = 'word '.repeat(2 * 1024 * 1024 - 1);
    const body = Buffer.from(JSON.stringify({ model: 'service-test', messages: [0, 1, 2, 3].map((i) => ({ role: i % 2 ? 'assistant' : 'user', content })) }));
    expect(body.length).toBeGreaterThan(40 * MB);
    // The baseline is taken after one such upload went the whole way: parser threads started, code
    // compiled, the allocator's arenas made. What must not stay is the load's own memory.
    expect((await post(body)).status).toBe(200);
    const baseline = await settledRss(pid);
    const liveBaseline = await liveMemory();
    expect(liveBaseline).toBeGreaterThan(0);

    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(body))).finally(() => clearInterval(sampler));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    for (const answer of answers.filter((a) => a.status === 503)) {
      expect(answer.json.error.code).toBe('server_busy');
      expect(answer.headers.get('retry-after')).toBe('1');
    }

    let last = 0;
    // A collection before each reading: the parser threads stop a few seconds after their last work,
    // and what they return only shows after that.
    await waitFor(async () => {
      await inspector.collectGarbage();
      return (last = rssOf(pid)) <= baseline + RSS_MARGIN;
    }, SETTLE_DEADLINE_MS, `RSS back within ${RSS_MARGIN / MB} MB of its baseline of ${Math.round(baseline / MB)} MB`).catch((error) => {
      throw new Error(`${(error as Error).message}; it is ${Math.round(last / MB)} MB (peak ${Math.round(peak / MB)} MB)`);
    });
    const live = await liveMemory();
    expect(live - liveBaseline, `live JavaScript memory ${Math.round(live / MB)} MB against ${Math.round(liveBaseline / MB)} MB before the load`).toBeLessThan(LIVE_MARGIN);
    expect((await post(Buffer.from('{"model":"service-test","messages":[{"role":"user","content":"hi"}]}'))).status).toBe(200);
  }, 180_000);
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
