// `npm run bench -- --redis` (or `node bench/redis.ts` after `npm --prefix bench ci`): what shared
// mode costs per request. Two gateways of the same code on the same manifests (every limit set, high
// enough never to refuse), one in single-process mode and one with TOLLGATE_REDIS_URL pointing at a
// redis-server on loopback, measured interleaved (A B, then B A) in the same run: latency at a
// moderate fixed rate, throughput at a fixed concurrency, the gateway's CPU per request (and Redis's),
// and Redis's own count of script calls per request. Reported as shared ÷ single-process ratios: the
// machine's noise moves both sides of a ratio, not the ratio.
//   --quick        short rounds (a smoke test)
//   --only a,b     only these scenarios (chat, stream20; default both)
//   --baseline REF also the gateway of commit REF in shared mode (its own key prefix), in the same rounds
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../test/helpers/redis.ts';
import { paced, throughput } from './lib/load.ts';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { checkoutBaseline } from './lib/baseline.ts';
import { cpuSeconds, forkService, startTollgate, type TollgateProcess } from './lib/procs.ts';
import { BENCH_MODELS, scenarios } from './lib/scenarios.ts';
import { percentiles } from './lib/stats.ts';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const SECRET = 'bench-upstream-secret-0123456789';
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 6;
const PACED_MS = quick ? 2000 : 5000;
const THROUGHPUT_S = quick ? 2 : 4;
const onlyAt = process.argv.indexOf('--only');
const ONLY = onlyAt >= 0 ? process.argv[onlyAt + 1].split(',') : ['chat', 'stream20'];
const baselineAt = process.argv.indexOf('--baseline');
const BASELINE = baselineAt >= 0 ? process.argv[baselineAt + 1] : null;

const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-redis-'));
  const checkout = BASELINE ? checkoutBaseline(ROOT, BASELINE, await resultsDir()) : null;
  if (checkout) log(`baseline: ${checkout.label} (${checkout.ref}: ${checkout.subject}), also in shared mode`);
  const redis = await startRedis();
  const upstream = await forkService('upstream', path.join(BENCH_DIR, 'upstream.ts'), { BENCH_UPSTREAM_KEY: SECRET });
  const gateways: Array<TollgateProcess & { shared: boolean }> = [];
  try {
    const manifests = benchManifests({ upstreamURL: `${upstream.origin}/v1`, models: BENCH_MODELS, keyCount: 100, maxConnections: 500 });
    const configFile = path.join(dir, 'tollgate.yaml');
    await writeFile(configFile, manifests.yaml);
    const sides: Array<[string, string, Record<string, string>]> = [
      ['single-process', ROOT, {}],
      ['shared (redis)', ROOT, { TOLLGATE_REDIS_URL: redis.url }],
    ];
    // The baseline's keys under a prefix of their own: the two shared gateways never touch each other's counters.
    if (checkout) sides.push([`shared, ${checkout.label}`, checkout.dir, { TOLLGATE_REDIS_URL: redis.url, TOLLGATE_REDIS_PREFIX: 'baseline:' }]);
    for (const [name, root, env] of sides) {
      const instance = path.join(dir, name.replace(/\W+/g, '-'));
      await mkdir(instance, { recursive: true });
      const started = await startTollgate({ name, root, configFile, dataDir: path.join(instance, 'data'), logFile: path.join(instance, 'gateway.log'), env: { [UPSTREAM_SECRET_ENV]: SECRET, ...env }, readyTimeoutMs: 60_000 });
      gateways.push(Object.assign(started, { shared: 'TOLLGATE_REDIS_URL' in env }));
    }
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.cli('INFO', 'server'))?.[1]);
    const single = gateways[0];
    const lines: string[] = [`Redis mode cost: same manifests (all four limits set), redis-server on loopback; ${ROUNDS} interleaved latency rounds, 2 throughput rounds each; load average ${loadAverage()} at the start. Ratios are to single-process in the same run.`, ''];
    lines.push(
      '| scenario | gateway | p50 ms (ratio) | p99 ms | req/s (ratio) | gateway CPU ms/request (ratio) | Redis CPU ms/request | script calls per request (with lease renewals) |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const scenario of scenarios().filter((s) => ONLY.includes(s.id))) {
      const stats = new Map(gateways.map((g) => [g, { samples: [] as number[], rps: [] as number[], cpuSeconds: 0, redisSeconds: 0, scriptCalls: 0, requests: 0 }]));
      for (const g of gateways) await throughput(g, scenario, { connections: scenario.connections, durationS: 1, keys: manifests.keys });
      for (let round = 0; round < ROUNDS; round++) {
        for (const g of round % 2 === 0 ? gateways : [...gateways].reverse()) {
          const r = await paced(g, scenario, { rate: scenario.rate, durationMs: PACED_MS / 2, warmupMs: round === 0 ? 300 : 0, keys: manifests.keys });
          stats.get(g)!.samples.push(...r.latencies);
        }
      }
      for (let round = 0; round < 2; round++) {
        for (const g of round % 2 === 0 ? gateways : [...gateways].reverse()) {
          const side = stats.get(g)!;
          const [cpuBefore, redisBefore, callsBefore] = [cpuSeconds(g.pid), cpuSeconds(redisPid), await commandCount(redis.cli)];
          const result = await throughput(g, scenario, { connections: scenario.connections, durationS: THROUGHPUT_S, keys: manifests.keys });
          side.cpuSeconds += cpuSeconds(g.pid) - cpuBefore;
          side.requests += result.requests + result.non2xx;
          side.rps.push(result.rps);
          if (g.shared) {
            side.redisSeconds += cpuSeconds(redisPid) - redisBefore;
            // Settlements still on their way when a run ends are counted in the next run's delta.
            side.scriptCalls += (await commandCount(redis.cli)) - callsBefore;
          }
        }
      }
      const figures = (g: (typeof gateways)[number]) => {
        const side = stats.get(g)!;
        const per = (value: number) => value / Math.max(1, side.requests);
        return { p: percentiles(side.samples), rps: mean(side.rps), cpuMs: per(side.cpuSeconds * 1000), redisMs: per(side.redisSeconds * 1000), calls: per(side.scriptCalls) };
      };
      const reference = figures(single);
      for (const g of gateways) {
        const f = figures(g);
        const ratio = (value: number, of: number) => (g === single ? '' : ` (${(value / of).toFixed(2)})`);
        lines.push(
          `| ${scenario.label} | ${g.name} | ${f.p.p50.toFixed(2)}${ratio(f.p.p50, reference.p.p50)} | ${f.p.p99.toFixed(1)} | ${f.rps.toFixed(0)}${ratio(f.rps, reference.rps)} | ${f.cpuMs.toFixed(3)}${ratio(f.cpuMs, reference.cpuMs)} | ${g.shared ? f.redisMs.toFixed(3) : '–'} | ${g.shared ? f.calls.toFixed(2) : '–'} |`,
        );
        log(`${scenario.label} ${g.name}: p50 ${f.p.p50.toFixed(2)} ms, ${f.rps.toFixed(0)} req/s, CPU ${f.cpuMs.toFixed(3)} ms per request${g.shared ? ` (+ Redis ${f.redisMs.toFixed(3)}), ${f.calls.toFixed(2)} script calls per request` : ''}`);
      }
    }
    const text = lines.join('\n');
    console.log(text);
    await writeFile(path.join(await resultsDir(), `redis-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}.md`), `${text}\n`);
  } finally {
    for (const g of gateways) await g.stop();
    await upstream.stop();
    await redis.close();
    checkout?.remove();
    await rm(dir, { recursive: true, force: true });
  }
}

async function resultsDir(): Promise<string> {
  const results = path.join(BENCH_DIR, 'results');
  await mkdir(results, { recursive: true });
  return results;
}

function mean(values: number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
}

function loadAverage(): string {
  return loadavg()[0].toFixed(1);
}

/**
 * Script calls the gateways have made so far (EVALSHA, or EVAL once after a restart): a request's
 * admission is one, its settlement and usage count two more sent in one write; the commands a script
 * runs inside Redis are not counted.
 */
async function commandCount(cli: (...args: string[]) => Promise<string>): Promise<number> {
  const info = await cli('INFO', 'commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(match[2]);
  return calls;
}

await main();
