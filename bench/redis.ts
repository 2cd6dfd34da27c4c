// `npm run bench -- --redis` (or `node bench/redis.ts` after `npm --prefix bench ci`): what shared
// mode costs per request. Two gateways of the same code on the same manifests (every limit set, high
// enough never to refuse), one in single-process mode and one with TOLLGATE_REDIS_URL pointing at a
// redis-server on loopback, measured interleaved (A B, then B A) in the same run: latency at a
// moderate fixed rate, throughput at a fixed concurrency, and Redis's own count of round trips per request.
//   --quick   short rounds (a smoke test)
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../test/helpers/redis.ts';
import { paced, throughput } from './lib/load.ts';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { forkService, startTollgate, type TollgateProcess } from './lib/procs.ts';
import { BENCH_MODELS, scenarios } from './lib/scenarios.ts';
import { percentiles } from './lib/stats.ts';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const SECRET = 'bench-upstream-secret-0123456789';
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 6;
const PACED_MS = quick ? 2000 : 5000;
const THROUGHPUT_S = quick ? 2 : 4;

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-redis-'));
  const redis = await startRedis();
  const upstream = await forkService('upstream', path.join(BENCH_DIR, 'upstream.ts'), { BENCH_UPSTREAM_KEY: SECRET });
  const gateways: TollgateProcess[] = [];
  try {
    const manifests = benchManifests({ upstreamURL: `${upstream.origin}/v1`, models: BENCH_MODELS, keyCount: 100, maxConnections: 500 });
    const configFile = path.join(dir, 'tollgate.yaml');
    await writeFile(configFile, manifests.yaml);
    for (const [name, env] of [
      ['single-process', {}],
      ['shared (redis)', { TOLLGATE_REDIS_URL: redis.url }],
    ] as const) {
      const instance = path.join(dir, name.replace(/\W+/g, '-'));
      await mkdir(instance, { recursive: true });
      gateways.push(await startTollgate({ name, root: ROOT, configFile, dataDir: path.join(instance, 'data'), logFile: path.join(instance, 'gateway.log'), env: { [UPSTREAM_SECRET_ENV]: SECRET, ...env }, readyTimeoutMs: 60_000 }));
    }
    const lines: string[] = [`Redis mode cost: same code, same manifests (all four limits set), redis-server on loopback; ${ROUNDS} interleaved rounds.`, ''];
    lines.push('| scenario | mode | p50 ms | p99 ms | req/s (throughput) | Redis round trips per request |', '|---|---|---|---|---|---|');
    for (const scenario of scenarios().filter((s) => s.id === 'chat' || s.id === 'stream20')) {
      const samples = new Map<string, number[]>(gateways.map((g) => [g.name, []]));
      const rps = new Map<string, number[]>(gateways.map((g) => [g.name, []]));
      for (const g of gateways) await throughput(g, scenario, { connections: scenario.connections, durationS: 1, keys: manifests.keys });
      const before = await commandCount(redis.cli);
      let redisRequests = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? gateways : [...gateways].reverse();
        for (const g of order) {
          const r = await paced(g, scenario, { rate: scenario.rate, durationMs: PACED_MS / 2, warmupMs: round === 0 ? 300 : 0, keys: manifests.keys });
          samples.get(g.name)!.push(...r.latencies);
          if (g === gateways[1]) redisRequests += r.sent;
        }
      }
      const perRequest = ((await commandCount(redis.cli)) - before) / Math.max(1, redisRequests);
      for (let round = 0; round < 2; round++) {
        const order = round % 2 === 0 ? gateways : [...gateways].reverse();
        for (const g of order) rps.get(g.name)!.push((await throughput(g, scenario, { connections: scenario.connections, durationS: THROUGHPUT_S, keys: manifests.keys })).rps);
      }
      for (const g of gateways) {
        const p = percentiles(samples.get(g.name)!);
        const mean = rps.get(g.name)!.reduce((a, b) => a + b, 0) / rps.get(g.name)!.length;
        const commands = g === gateways[1] ? perRequest.toFixed(1) : '–';
        lines.push(`| ${scenario.label} | ${g.name} | ${p.p50.toFixed(2)} | ${p.p99.toFixed(2)} | ${mean.toFixed(0)} | ${commands} |`);
        log(`${scenario.label} ${g.name}: p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms, ${mean.toFixed(0)} req/s`);
      }
    }
    const text = lines.join('\n');
    console.log(text);
    const results = path.join(BENCH_DIR, 'results');
    await mkdir(results, { recursive: true });
    await writeFile(path.join(results, `redis-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}.md`), `${text}\n`);
  } finally {
    for (const g of gateways) await g.stop();
    await upstream.stop();
    await redis.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Round trips the gateways have made so far: every limit operation is one script call (EVALSHA, or
 * EVAL once after a restart), so their count is the count of round trips; the commands a script runs
 * inside Redis are not round trips and are not counted.
 */
async function commandCount(cli: (...args: string[]) => Promise<string>): Promise<number> {
  const info = await cli('INFO', 'commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(match[2]);
  return calls;
}

await main();
