// What metrics and tracing cost in CPU per request, measured so that the machine's noise cancels:
// several processes of each of two configurations are loaded at the same time (each by its own
// clients, as fast as they go), their CPU and answers are read every window, and each configuration's
// figure is pooled over its processes. `npm run bench` measures one gateway after another, or all at a
// fixed moderate rate; on a shared machine its saturated figures move with the moment and with the
// process (two identically configured gateways differ by several percent for their whole life: where
// they run, what their JIT and heap did), and a cost of a few percent drowns. Here the moment is
// shared by both sides in every window, and the process is averaged over --processes of each.
// Usage: node bench/telemetry-cost.ts [--cost metrics,tracing,unsampled,kept] [--scenario chat]
//        [--processes 2] [--runs 2] [--seconds 40] [--warmup 15] [--window-ms 1000] [--connections 16 | --rate R]
//        [--node-args "…"] [--profile] [--pin] [--keep] [--base-env K=V,…] [--with-env K=V,…]   (BENCH_TRACES_SAMPLER(_ARG) change the sample, as for run.ts)
//   --cost       which costs, each its own runs:
//                  same       Tollgate as benchmarked on both sides: an A/A test of the method, or an A/B
//                             of a setting with --base-env/--with-env
//                  metrics    metrics on (tracing off) against metrics and tracing off
//                  tracing    Tollgate as benchmarked (metrics on, tracing at a 10% parent-based sample
//                             into a local sink) against metrics on, tracing off
//                  unsampled  tracing on with nothing sampled against tracing off: what every request
//                             pays, kept or not
//                  kept       Tollgate as benchmarked against tracing whose ratio sampler keeps nothing:
//                             what recording some traces costs beyond making their ids
//   --profile    every gateway under --cpu-prof, into bench/results/telemetry-cost-<time>/<gateway>/
//                with the measured window (compare two with profile-compare.ts)
//   --processes  gateways of each configuration per run (all loaded at once: 2 × N gateways)
//   --runs       runs per cost; which side of a pair of gateways starts first alternates pair by pair and run by run
//   --connections  saturating load: this many clients per gateway, each sending as soon as answered
//   --rate       instead, a fixed rate per gateway (requests a second, open loop): every gateway serves
//                the same requests, so the sides compare at one operating point below saturation
//   --node-args  extra Node.js flags for every gateway (after the chart's), e.g. "--max-opt=2"
//   --base-env, --with-env   K=V,K=V: variables added to that side of every cost
//   --baseline   REF: the base side runs REF's gateway (lib/baseline.ts); with --cost same, an A/B of two builds
//   --pin        every gateway on the last CPU, everything else on the others (taskset)
//   --keep       keep the gateways' logs (with --node-args "--trace-gc", their collector's lines)
// A cost's figure is the pooled CPU per request of one side over the other's, per run, with a 95%
// interval from resampling the windows (the moment's noise), and the spread between the processes of
// one configuration (the process's noise, an A/A test inside the run).
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { steady, sustained, type SustainedLoad } from './lib/load.ts';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { cpuSeconds, forkService, pinning, pinProcess, startTollgate, threadGroupCpuSeconds, type Service, type TollgateProcess } from './lib/procs.ts';
import { checkoutBaseline } from './lib/baseline.ts';
import { BENCH_MODELS, scenarios } from './lib/scenarios.ts';
import { TELEMETRY_VARIANTS, tracingEnv, UNSAMPLED_VARIANT } from './lib/telemetry-variants.ts';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const ROOT = path.resolve(import.meta.dirname, '..');
const SECRET = 'bench-upstream-secret-0123456789';
const PROCESSES = Number(option('--processes') ?? 2);
const RUNS = Number(option('--runs') ?? 2);
const SECONDS = Number(option('--seconds') ?? 40);
const WARMUP_S = Number(option('--warmup') ?? 15);
const WINDOW_MS = Number(option('--window-ms') ?? 1000);
const CONNECTIONS = Number(option('--connections') ?? 16);
const RATE = option('--rate') === undefined ? null : Number(option('--rate'));
const KEYS = Number(option('--keys') ?? 10_000);
const NODE_ARGS = option('--node-args')?.split(' ').filter(Boolean) ?? [];
const PROFILE_DIR = args.includes('--profile') ? path.join(import.meta.dirname, 'results', `telemetry-cost-${new Date().toISOString().replace(/[:.]/g, '-')}`) : null;
const scenario = scenarios().find((s) => s.id === (option('--scenario') ?? 'chat'));
if (!scenario) throw new Error(`unknown scenario; ids: ${scenarios().map((s) => s.id).join(', ')}`);

interface Configuration {
  label: string;
  env: (sink: Service) => Record<string, string>;
  /** Where its gateway runs from: the work tree, or --baseline's copy of REF. */
  root?: string;
}
const TRACING_OFF: Configuration = { label: 'metrics on, tracing off', env: () => ({ ...TELEMETRY_VARIANTS[0].env }) };
const TOLLGATE: Configuration = { label: 'metrics and tracing on (Tollgate as benchmarked)', env: (sink) => tracingEnv(sink) };
const COSTS: Record<string, { what: string; base: Configuration; with: Configuration }> = {
  metrics: { what: 'metrics', base: { label: 'metrics and tracing off', env: () => ({ ...TELEMETRY_VARIANTS[1].env }) }, with: TRACING_OFF },
  tracing: { what: 'tracing at a 10% parent-based sample', base: TRACING_OFF, with: TOLLGATE },
  unsampled: { what: 'tracing with nothing sampled', base: TRACING_OFF, with: { label: 'tracing on, nothing sampled', env: (sink) => ({ ...tracingEnv(sink), ...UNSAMPLED_VARIANT.env }) } },
  // Two objects: the sides are told apart by identity.
  same: { what: 'nothing (an A/A test; an A/B with --base-env, --with-env)', base: TOLLGATE, with: { ...TOLLGATE, label: `${TOLLGATE.label}, its twin` } },
  kept: {
    what: 'keeping traces',
    base: { label: 'tracing on, the ratio sampler at 0 (nothing kept)', env: (sink) => ({ ...tracingEnv(sink), OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }) },
    with: TOLLGATE,
  },
};
// --base-env and --with-env add variables to one side: an A/B of a switch, or (with `same`) of two builds' settings.
const envOption = (name: string): Record<string, string> => Object.fromEntries((option(name) ?? '').split(',').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
const [baseExtra, withExtra] = [envOption('--base-env'), envOption('--with-env')];
const withEnv = (side: Configuration, extra: Record<string, string>): Configuration =>
  Object.keys(extra).length === 0 ? side : { label: `${side.label}, ${Object.entries(extra).map(([k, v]) => `${k}=${v}`).join(' ')}`, env: (sink) => ({ ...side.env(sink), ...extra }) };
for (const cost of Object.values(COSTS)) Object.assign(cost, { base: withEnv(cost.base, baseExtra), with: withEnv(cost.with, withExtra) });
// --baseline REF: the base side of every cost runs REF's gateway (with `same`: an A/B of two builds).
const baselineRef = option('--baseline');
const baseline = baselineRef ? checkoutBaseline(ROOT, baselineRef, path.join(import.meta.dirname, 'results')) : null;
if (baseline) for (const cost of Object.values(COSTS)) cost.base = { ...cost.base, label: `${cost.base.label} (${baseline.label})`, root: baseline.dir };
const costs = (option('--cost') ?? 'metrics,tracing').split(',');
for (const cost of costs) if (!COSTS[cost]) throw new Error(`unknown cost ${cost}; one of ${Object.keys(COSTS).join(', ')}`);

// --pin: every gateway on the last CPU, this runner (its load), the upstream and the sink on the others,
// so that all gateways share one core on equal terms instead of wherever the scheduler puts them.
if (args.includes('--pin')) {
  const count = cpus().length;
  if (count < 2) throw new Error('--pin needs 2 CPUs or more');
  pinning.tollgate = String(count - 1);
  // The services forked below inherit it.
  pinProcess(process.pid, count === 2 ? '0' : `0-${count - 2}`);
}
const dir = await mkdtemp(path.join(tmpdir(), 'telemetry-cost-'));
const upstream = await forkService('upstream', path.join(import.meta.dirname, 'upstream.ts'), { BENCH_UPSTREAM_KEY: SECRET });
const sink = await forkService('otlp-sink', path.join(import.meta.dirname, 'otlp-sink.ts'), {});
const { keys, yaml } = benchManifests({ upstreamURL: `${upstream.origin}/v1`, models: BENCH_MODELS, keyCount: KEYS, maxConnections: 2000 });
// In a directory of their own: the file source watches the manifests' directory, and log writes there
// would be events for one gateway alone to filter.
await mkdir(path.join(dir, 'manifests'));
const configFile = path.join(dir, 'manifests', 'tollgate.yaml');
await writeFile(configFile, yaml);

console.log(`${scenario.label}: ${PROCESSES} processes of each configuration loaded at once (${RATE === null ? `${CONNECTIONS} connections each` : `${RATE} requests a second each, open loop`}${pinning.tollgate === null ? '' : `, all on CPU ${pinning.tollgate}`}${NODE_ARGS.length ? `, node ${NODE_ARGS.join(' ')}` : ''}), ${WARMUP_S} s warm-up, then ${SECONDS} s in ${WINDOW_MS} ms windows; ${RUNS} runs per cost\n`);
const summary: string[] = [];
let instance = 0;
for (const cost of costs) {
  const { what, base, with: other } = COSTS[cost];
  const figures: number[] = [];
  console.log(`## ${what}: "${other.label}" against "${base.label}"`);
  for (let run = 0; run < RUNS; run++) {
    const gateways: Array<{ side: Configuration; process: TollgateProcess }> = [];
    for (let i = 0; i < PROCESSES; i++) {
      // The gateway started first of a pair reads dearer for its life (docs/benchmarks.md): which side
      // goes first alternates pair by pair, and run by run, so that it cancels within a run.
      for (const side of (run + i) % 2 === 0 ? [base, other] : [other, base]) {
        const name = `g${instance++}`;
        const instanceDir = path.join(dir, name);
        await mkdir(instanceDir);
        const process = await startTollgate({ name, root: side.root ?? ROOT, configFile, dataDir: path.join(instanceDir, 'data'), logFile: path.join(instanceDir, 'gateway.log'), env: { [UPSTREAM_SECRET_ENV]: SECRET, ...side.env(sink) }, nodeArgs: PROFILE_DIR ? [...NODE_ARGS, '--cpu-prof', `--cpu-prof-dir=${path.join(PROFILE_DIR, name)}`] : NODE_ARGS, readyTimeoutMs: 120_000 });
        gateways.push({ side, process });
      }
    }
    const loads: SustainedLoad[] = gateways.map(({ process }) => (RATE === null ? sustained(process, scenario, { connections: CONNECTIONS, keys }) : steady(process, scenario, { rate: RATE, keys })));
    // Every gateway gets cheaper per request for its first seconds (V8 optimising, the young
    // generation growing): not measured.
    await sleep(WARMUP_S * 1000);
    const windows: Array<{ cpu: number[]; answered: number[] }> = [];
    const failedBefore = loads.map((load) => load.failed());
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const threadsBefore = gateways.map(({ process }) => threadGroupCpuSeconds(process.pid));
    const until = performance.now() + SECONDS * 1000;
    while (performance.now() < until) {
      const before = gateways.map(({ process }, i) => ({ cpu: cpuSeconds(process.pid), answered: loads[i].answered() }));
      await sleep(WINDOW_MS);
      windows.push({ cpu: gateways.map(({ process }, i) => cpuSeconds(process.pid) - before[i].cpu), answered: loads.map((load, i) => load.answered() - before[i].answered) });
    }
    const toUs = Number(process.hrtime.bigint() / 1000n);
    const threadsAfter = gateways.map(({ process }) => threadGroupCpuSeconds(process.pid));
    const failed = loads.reduce((sum, load, i) => sum + load.failed() - failedBefore[i], 0);
    await Promise.all(loads.map((load) => load.stop()));
    await Promise.all(gateways.map(({ process }) => process.stop()));
    if (PROFILE_DIR) {
      // The window profile-compare.ts reads: the measured seconds, and the answers in them.
      for (const [i, { side, process }] of gateways.entries()) {
        const folder = path.join(PROFILE_DIR, process.name);
        const file = (await readdir(folder)).find((f) => f.endsWith('.cpuprofile'));
        if (!file) throw new Error(`no profile in ${folder}`);
        const requests = windows.reduce((sum, w) => sum + w.answered[i], 0);
        await writeFile(path.join(folder, 'windows.json'), JSON.stringify([{ name: `Tollgate, ${scenario.label}: ${requests} requests`, target: 'tollgate', from: fromUs, to: toUs, file: path.join(folder, file) }]));
        console.log(`  profile of ${process.name} (${side.label}): ${folder}`);
      }
    }

    const indexesOf = (side: Configuration) => gateways.flatMap((g, i) => (g.side === side ? [i] : []));
    const [baseIndexes, otherIndexes] = [indexesOf(base), indexesOf(other)];
    /** CPU per request of these gateways together, over these windows. */
    const perRequest = (indexes: readonly number[], picked: readonly number[]) => {
      let cpu = 0;
      let answered = 0;
      for (const w of picked) for (const i of indexes) ((cpu += windows[w].cpu[i]), (answered += windows[w].answered[i]));
      return cpu / answered;
    };
    const all = windows.map((_, w) => w);
    /** Each thread group's CPU per request over the measured window, pooled over these gateways. */
    const byThread = (indexes: readonly number[]) => {
      const answered = indexes.reduce((sum, i) => sum + windows.reduce((s, w) => s + w.answered[i], 0), 0);
      const groups = new Map<string, number>();
      for (const i of indexes) for (const [name, after] of threadsAfter[i]) groups.set(name, (groups.get(name) ?? 0) + after - (threadsBefore[i].get(name) ?? 0));
      return new Map([...groups].map(([name, cpu]) => [name, cpu / answered]));
    };
    const threadsLine = (baseSide: readonly number[], otherSide: readonly number[]) => {
      const [a, b] = [byThread(baseSide), byThread(otherSide)];
      const names = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => (b.get(y) ?? 0) - (b.get(x) ?? 0));
      return names.map((name) => `${name} ${((a.get(name) ?? 0) * 1e6).toFixed(1)} → ${((b.get(name) ?? 0) * 1e6).toFixed(1)}`).join(', ');
    };
    const ratio = perRequest(otherIndexes, all) / perRequest(baseIndexes, all);
    figures.push(ratio - 1);
    const interval = bootstrap(windows.length, (picked) => perRequest(otherIndexes, picked) / perRequest(baseIndexes, picked));
    const describe = (indexes: readonly number[]) => {
      const each = indexes.map((i) => ({ perRequest: perRequest([i], all), rate: windows.reduce((sum, w) => sum + w.answered[i], 0) / SECONDS }));
      const values = each.map((p) => p.perRequest);
      return `${(perRequest(indexes, all) * 1e6).toFixed(1)} µs/req pooled (processes: ${each.map((p) => `${(p.perRequest * 1e6).toFixed(0)} µs at ${p.rate.toFixed(0)}/s`).join(', ')}; spread ${((Math.max(...values) / Math.min(...values) - 1) * 100).toFixed(1)}%)`;
    };
    console.log(`run ${run + 1}: ${percent(ratio - 1)} (95%: ${percent(interval[0] - 1)} to ${percent(interval[1] - 1)})${failed ? `; ${failed} requests failed` : ''}`);
    console.log(`  ${base.label}: ${describe(baseIndexes)}`);
    console.log(`  ${other.label}: ${describe(otherIndexes)}`);
    console.log(`  by thread, µs/req pooled (${base.label} → ${other.label}): ${threadsLine(baseIndexes, otherIndexes)}`);
  }
  const mean = figures.reduce((a, b) => a + b, 0) / figures.length;
  const line = `${what}: ${percent(mean)} (mean of ${figures.length} runs: ${figures.map(percent).join(', ')})`;
  summary.push(line);
  console.log(`${line}\n`);
}
console.log(`## Summary (${scenario.label})\n${summary.map((line) => `- ${line}`).join('\n')}`);
await upstream.stop();
await sink.stop();
baseline?.remove();
if (args.includes('--keep')) console.log(`gateways' logs and data kept in ${dir}`);
else await rm(dir, { recursive: true, force: true });
process.exit(0);

function percent(value: number): string {
  return `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)}%`;
}

/** A 95% interval for `statistic` over windows drawn with replacement (a fixed seed: the same run gives the same interval). */
function bootstrap(count: number, statistic: (picked: number[]) => number): [number, number] {
  let seed = 12345;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const values: number[] = [];
  for (let b = 0; b < 2000; b++) values.push(statistic(Array.from({ length: count }, () => Math.floor(random() * count))));
  values.sort((a, b) => a - b);
  return [values[Math.floor(values.length * 0.025)], values[Math.floor(values.length * 0.975)]];
}
