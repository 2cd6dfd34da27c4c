// Where the time of loading N keys goes, phase by phase, inside one process (run with --expose-gc):
//   manifests   the gateway's parseManifests: YAML parse and validation, as the file source runs it
//   validate    validateManifest alone on the same documents (its share of the above)
//   snapshot    new Snapshot(resources): the maps a request reads
// and what stays on the heap once the loading garbage is collected. The gateway's start-to-ready time
// is mostly their sum; this says which part to work on.
// Usage: node --expose-gc bench/snapshot-phases.ts [--keys 1000,10000,100000] [--manifests-max N] [--json]
import { validateManifest } from '@tollgate/crds';
import { parseManifests } from '../gateway/src/resources/manifests.ts';
import { Snapshot } from '../gateway/src/resources/snapshot.ts';
import { benchManifests } from './lib/manifests.ts';
import { BENCH_MODELS } from './lib/scenarios.ts';

export interface Phases {
  keys: number;
  megabytes: number;
  /** parseManifests, parse and validation; null when skipped (above --manifests-max). */
  manifestsMs: number | null;
  validateMs: number | null;
  snapshotMs: number | null;
  /** Heap growth, after a full GC, of keeping the snapshot (and nothing else of the load). */
  retainedMB: number | null;
  /** Heap growth right after parseManifests, before its garbage is collected: a floor for the load's peak RSS. */
  parsePeakHeapMB: number | null;
}

const gc = (globalThis as { gc?: () => void }).gc;

function heapMB(): number {
  gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

export function measure(keys: number, manifestsMax = Infinity): Phases {
  const { yaml } = benchManifests({ upstreamURL: 'http://127.0.0.1:9/v1', models: BENCH_MODELS, keyCount: keys, maxConnections: 2000 });
  const megabytes = yaml.length / 1024 / 1024;
  if (keys > manifestsMax) return { keys, megabytes, manifestsMs: null, validateMs: null, snapshotMs: null, retainedMB: null, parsePeakHeapMB: null };
  const baseline = heapMB();
  let t = performance.now();
  const parsed = parseManifests(yaml, 'bench.yaml');
  const manifestsMs = performance.now() - t;
  const parsePeakHeapMB = process.memoryUsage().heapUsed / 1024 / 1024 - baseline;
  if (!parsed.ok) throw new Error(parsed.errors[0]);
  const resources = parsed.resources;
  t = performance.now();
  for (const resource of resources) if (!validateManifest(resource).ok) throw new Error('invalid bench manifest');
  const validateMs = performance.now() - t;
  t = performance.now();
  const snapshot = new Snapshot(resources);
  const snapshotMs = performance.now() - t;
  resources.length = 0;
  const retainedMB = heapMB() - baseline;
  if (snapshot.keysByHash.size !== keys) throw new Error('snapshot lost keys');
  return { keys, megabytes, manifestsMs, validateMs, snapshotMs, retainedMB, parsePeakHeapMB };
}

export function phasesTable(rows: Phases[]): string {
  const f = (n: number | null, d = 0) => (n === null ? 'skipped' : n.toFixed(d));
  return [
    '| keys | manifests MB | parseManifests ms | of which validation ms | new Snapshot ms | heap after parse MB | retained by snapshot MB |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.keys.toLocaleString('en')} | ${f(r.megabytes, 1)} | ${f(r.manifestsMs)} | ${f(r.validateMs)} | ${f(r.snapshotMs, 1)} | ${f(r.parsePeakHeapMB)} | ${f(r.retainedMB, 1)} |`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i === -1 ? undefined : args[i + 1];
  };
  if (!gc) console.error('note: run with --expose-gc for retained-heap figures');
  const counts = (option('--keys') ?? '1000,10000,100000').split(',').map(Number);
  const manifestsMax = Number(option('--manifests-max') ?? Infinity);
  const rows = counts.map((n) => measure(n, manifestsMax));
  console.log(args.includes('--json') ? JSON.stringify(rows) : phasesTable(rows));
}
