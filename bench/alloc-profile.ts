// Where a request's garbage comes from: V8's sampling heap profiler, counting objects that were
// collected too (includeObjectsCollectedByMinorGC/MajorGC), over N requests of one bench scenario
// through a real gateway in this process, with the bench's fake upstream in a child process.
// Garbage collection is 7-9% of a proxied request's CPU and all of its p99 excess (docs/benchmarks.md);
// the CPU profile says how long collections take, this says what fills the young generation.
// Usage: node bench/alloc-profile.ts [scenario id: chat, stream20, embeddings …] [--requests N] [--top N] [--metrics-off]
// [--stacks NAME]: the call stacks of the allocations made by functions named NAME (nextTick, say).
// [--survivors]: only what outlived the young generation (promoted to the old one): what makes
// scavenges long and fills the old generation, where the default counts all garbage.
// Figures are KB per request, by the innermost gateway frame of each allocation's stack and by the
// allocating function. The load client (undici) runs in this process too; its allocations are listed
// as "(client side)" where its stack shows it.
import { fork } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../gateway/src/config.ts';
import { startGateway } from '../gateway/src/server.ts';
import { closedLoop } from './lib/load.ts';
import { benchManifests, UPSTREAM_SECRET_ENV } from './lib/manifests.ts';
import { BENCH_MODELS, scenarios } from './lib/scenarios.ts';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const which = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--'))) ?? 'chat';
const N = Number(option('--requests') ?? 5000);
const TOP = Number(option('--top') ?? 25);
const up = fork('bench/upstream.ts', [], { env: { ...process.env, BENCH_UPSTREAM_KEY: 'sec', PORT: '0' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const port: number = await new Promise((r) => up.on('message', (m: any) => r(m.port)));
process.env[UPSTREAM_SECRET_ENV] = 'sec';
const dir = await mkdtemp(path.join(tmpdir(), 'alloc-'));
const { keys, yaml } = benchManifests({ upstreamURL: `http://127.0.0.1:${port}/v1`, models: BENCH_MODELS, keyCount: Number(option('--keys') ?? 100), maxConnections: 2000 });
await writeFile(path.join(dir, 't.yaml'), yaml);
const log = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: false }));
const defaults = loadConfig({});
const gw = await startGateway({ ...defaults, telemetry: { ...defaults.telemetry, metricsPort: args.includes('--metrics-off') ? null : 0 }, port: 0, host: '127.0.0.1', configFile: path.join(dir, 't.yaml'), configFileExplicit: true, dataDir: path.join(dir, 'data'), bootstrapDemoKey: false }, log);
const found = scenarios().find((s) => s.id === which);
if (!found) throw new Error(`unknown scenario '${which}'; ids: ${scenarios().map((s) => s.id).join(', ')}`);
const scenario = found;
const fire = (count: number) => closedLoop(`${gw.url}${scenario.path}`, scenario, { count, connections: Number(option('--connections') ?? 10), keys });
await fire(Number(option('--warmup') ?? 3000));
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !args.includes('--survivors') } as any);
await fire(N);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as any;
// The client (undici here) runs in this process too: attribute by stack, report gateway-side frames.
const bySelf = new Map<string, number>();
// --stacks NAME: where the allocations of functions named NAME come from (their callers, innermost first).
const stacksOf = option('--stacks');
const byStack = new Map<string, number>();
const byGateway = new Map<string, number>();
let total = 0;
function walk(node: any, stack: string[]) {
  const f = node.callFrame;
  const name = `${f.functionName || '(anon)'} ${f.url.replace(/.*\/(node_modules|work\/main)\//, '')}:${f.lineNumber + 1}`;
  const s = [...stack, name];
  const size = node.selfSize;
  if (size) {
    total += size;
    bySelf.set(name, (bySelf.get(name) ?? 0) + size);
    if (stacksOf && name.startsWith(`${stacksOf} `)) {
      const key = s.slice(-6).reverse().join(' < ');
      byStack.set(key, (byStack.get(key) ?? 0) + size);
    }
    const g = [...s].reverse().find((x) => x.includes('gateway/src'));
    const key = g ?? (s.some((x) => x.includes('alloc-profile')) ? '(client side)' : '(other: ' + s.slice(-3).join(' < ') + ')');
    byGateway.set(key, (byGateway.get(key) ?? 0) + size);
  }
  for (const c of node.children) walk(c, s);
}
walk(profile.head, []);
console.log(`total sampled ${(total / N / 1024).toFixed(1)} KB per request (client included)`);
console.log('--- by innermost gateway frame (KB/req)');
for (const [k, v] of [...byGateway].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log((v / N / 1024).toFixed(2).padStart(7), k);
console.log('--- by allocating function (KB/req)');
for (const [k, v] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log((v / N / 1024).toFixed(2).padStart(7), k);
if (stacksOf) {
  console.log(`--- stacks of ${stacksOf} (KB/req)`);
  for (const [k, v] of [...byStack].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log((v / N / 1024).toFixed(2).padStart(7), k.slice(0, 300));
}
await gw.close();
up.kill();
await rm(dir, { recursive: true, force: true });
process.exit(0);
