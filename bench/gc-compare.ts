// What the young-generation collector does per request, in the current gateway and in the gateway of
// an older commit, each run as in production (its own process, NODE_OPTIONS of the chart) under the
// same closed-loop load: scavenges per 1,000 requests, their pause per request, and what each one
// copies and promotes (V8's --trace-gc-nvp). Promoted bytes are what fills the old generation and
// makes scavenges long; `--survivors` says which allocation sites they come from. The other collections
// (mark-compacts: gc=mc) are counted too, with their pause per request: what large bodies pay.
// Usage: node bench/gc-compare.ts [--baseline REF] [--scenario chat] [--keys N] [--requests N]
//        [--connections N] [--node-args "…"] [--survivors] [--top N] [--pin] [--env K=V,…]
//   --baseline REF   also REF's gateway (as `npm run bench -- --baseline`); without it, only the current one
//   --baseline-only  REF's gateway alone (to bisect a change in what the collector does)
//   --node-args      extra Node.js flags for both, e.g. "--max-semi-space-size=16"
//   --env K=V,K=V    extra environment for both gateways, e.g. TOLLGATE_KEEPALIVE_TIMEOUT_MS=5000
//   --pin            as npm run bench -- --pin: the gateway alone on the last CPU
//   --survivors      V8's sampling heap profiler over the measured requests, counting only what outlived
//                    the young generation, by allocation stack (innermost four frames), KB per request
//                    (sampling slows the scavenges down: read their pause from a run without it)
// KEEP=1 in the environment keeps the temporary directory, with each gateway's log (the per-scavenge lines).
// Both gateways run with metrics and tracing off: the request path alone.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectInspector, inspectorURLIn } from '../test/helpers/inspector.ts';
import { checkoutBaseline } from './lib/baseline.ts';
import { closedLoop } from './lib/load.ts';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { forkService, pinning, pinProcess, startTollgate, type TollgateProcess } from './lib/procs.ts';
import { BENCH_MODELS, scenarios } from './lib/scenarios.ts';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const ROOT = path.resolve(import.meta.dirname, '..');
const SECRET = 'bench-upstream-secret-0123456789';
const REQUESTS = Number(option('--requests') ?? 40_000);
const CONNECTIONS = Number(option('--connections') ?? 50);
const survivors = args.includes('--survivors');
const top = Number(option('--top') ?? 25);
const scenario = scenarios().find((s) => s.id === (option('--scenario') ?? 'chat'));
if (!scenario) throw new Error(`unknown scenario; ids: ${scenarios().map((s) => s.id).join(', ')}`);

// --pin: the gateway on the last CPU, this load generator and the upstream on the others, so that the
// gateway's requests do not wait for an upstream or a client that the scheduler put on its core.
if (args.includes('--pin')) {
  const { cpus } = await import('node:os');
  const count = cpus().length;
  pinning.tollgate = String(count - 1);
  pinProcess(process.pid, count === 2 ? '0' : `0-${count - 2}`);
}
const dir = await mkdtemp(path.join(tmpdir(), 'gc-compare-'));
const upstream = await forkService('upstream', path.join(import.meta.dirname, 'upstream.ts'), { BENCH_UPSTREAM_KEY: SECRET });
const { keys, yaml } = benchManifests({ upstreamURL: `${upstream.origin}/v1`, models: BENCH_MODELS, keyCount: Number(option('--keys') ?? 10_000), maxConnections: 2000 });
// The manifests in a directory of their own: the file source watches its directory.
await mkdir(path.join(dir, 'manifests'));
const configFile = path.join(dir, 'manifests', 'tollgate.yaml');
await writeFile(configFile, yaml);
const baselineRef = option('--baseline');
const baseline = baselineRef ? checkoutBaseline(ROOT, baselineRef, dir) : null;
const extraEnv = Object.fromEntries((option('--env') ?? '').split(',').filter(Boolean).map((pair) => pair.split('=') as [string, string]));
const nodeArgs = ['--trace-gc-nvp', ...(survivors ? ['--inspect=127.0.0.1:0'] : []), ...(option('--node-args')?.split(' ').filter(Boolean) ?? [])];

console.log(`${scenario.label}, ${CONNECTIONS} connections, ${REQUESTS} requests measured after as many to warm up; node args: ${nodeArgs.join(' ')}`);
const gateways = [...(args.includes('--baseline-only') ? [] : [['current', ROOT]]), ...(baseline ? [[baseline.label, baseline.dir]] : [])] as const;
for (const [name, root] of gateways) {
  const instance = path.join(dir, name.replace(/\W/g, '-'));
  await mkdir(instance);
  const logFile = path.join(instance, 'gateway.log');
  const env = { [UPSTREAM_SECRET_ENV]: SECRET, OTEL_SDK_DISABLED: 'true', TOLLGATE_METRICS_PORT: 'off', ...extraEnv };
  const gateway = await startTollgate({ name, root, configFile, dataDir: path.join(instance, 'data'), logFile, env, nodeArgs, readyTimeoutMs: 120_000 });
  await load(gateway, REQUESTS);
  const from = (await readFile(logFile, 'utf8')).length;
  const inspectorURL = survivors ? inspectorURLIn(await readFile(logFile, 'utf8')) : null;
  if (survivors && !inspectorURL) throw new Error('no inspector address in the gateway log');
  const inspector = inspectorURL ? await connectInspector(inspectorURL) : null;
  await inspector?.call('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
  await load(gateway, REQUESTS);
  const sampled = await inspector?.call('HeapProfiler.stopSampling');
  inspector?.close();
  const measured = (await readFile(logFile, 'utf8')).slice(from);
  console.log(`\n${name}: ${scavengeSummary(measured)}\n  ${otherCollections(measured)}`);
  if (sampled) printSurvivors(sampled.profile.head);
  await gateway.stop();
}
await upstream.stop();
baseline?.remove();
if (!process.env.KEEP) await rm(dir, { recursive: true, force: true });
else console.log('kept', dir);
process.exit(0);

function load(gateway: TollgateProcess, count: number): Promise<void> {
  return closedLoop(`${gateway.origin}${scenario!.path}`, scenario!, { count, connections: CONNECTIONS, keys, name: gateway.name });
}

/** Averages of V8's per-scavenge figures (--trace-gc-nvp lines with gc=s). */
function scavengeSummary(log: string): string {
  const lines = log.split('\n').filter((line) => line.includes(' gc=s '));
  const mean = (field: string) => {
    let sum = 0;
    for (const line of lines) sum += Number(new RegExp(` ${field.replace('.', '\\.')}=([\\d.]+)`).exec(line)?.[1] ?? 0);
    return sum / Math.max(1, lines.length);
  };
  const perRequest = lines.length / REQUESTS;
  return [
    `${(perRequest * 1000).toFixed(2)} scavenges per 1,000 requests, ${((mean('pause') * perRequest) * 1000).toFixed(1)} µs of pause per request;`,
    `per scavenge: pause ${mean('pause').toFixed(2)} ms (roots ${mean('scavenge.roots').toFixed(2)}), allocated since the last ${(mean('allocated') / 1e6).toFixed(1)} MB,`,
    `survived ${(mean('new_space_survived') / 1e3).toFixed(0)} KB, promoted ${(mean('promoted') / 1e3).toFixed(0)} KB = ${((mean('promoted') * perRequest) / 1024).toFixed(2)} KB per request`,
  ].join(' ');
}

/** The collections other than scavenges (mark-compacts, gc=mc, …): how many, and their pause per request. */
function otherCollections(log: string): string {
  const byKind = new Map<string, { count: number; pause: number }>();
  for (const line of log.split('\n')) {
    const kind = / gc=(\w+) /.exec(line)?.[1];
    if (!kind || kind === 's') continue;
    const entry = byKind.get(kind) ?? { count: 0, pause: 0 };
    entry.count++;
    entry.pause += Number(/ pause=([\d.]+)/.exec(line)?.[1] ?? 0);
    byKind.set(kind, entry);
  }
  if (byKind.size === 0) return 'no other collections';
  return [...byKind].map(([kind, { count, pause }]) => `gc=${kind}: ${((count / REQUESTS) * 1000).toFixed(2)} per 1,000 requests, ${((pause / REQUESTS) * 1000).toFixed(1)} µs of pause per request`).join('; ');
}

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

function printSurvivors(head: ProfileNode): void {
  const byStack = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode, stack: string[]) => {
    const frame = node.callFrame;
    const here = [...stack, `${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/(node_modules|gateway)\//, '$1/')}:${frame.lineNumber + 1}`];
    if (node.selfSize) {
      total += node.selfSize;
      const key = here.slice(-4).reverse().join(' < ');
      byStack.set(key, (byStack.get(key) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, []);
  console.log(`outlived the young generation: ${(total / REQUESTS / 1024).toFixed(2)} KB per request (sampled), by allocation stack:`);
  for (const [stack, bytes] of [...byStack].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(bytes / REQUESTS / 1024).toFixed(3).padStart(7)}  ${stack.slice(0, 240)}`);
}
