// Where the time of loading N keys goes, phase by phase, inside one process (run with --expose-gc):
//   yaml        parseAllDocuments + toJS, the `yaml` package alone
//   validate    validateManifest on every document (ajv)
//   manifests   the gateway's parseManifests, all of the above plus its own bookkeeping
//   snapshot    new Snapshot(resources): the maps a request reads
// and what stays on the heap once loading garbage is collected. The gateway's start-to-ready time
// is the sum; this says which part to fix. parseManifests is skipped above --manifests-max keys,
// where (today) it is quadratic and would run for minutes.
// Usage: node --expose-gc bench/snapshot-phases.ts [--keys 1000,10000,100000] [--manifests-max 20000] [--json]
import { parseAllDocuments } from 'yaml';
import { validateManifest } from '@tollgate/crds';
import { parseManifests } from '../gateway/src/resources/manifests.ts';
import { Snapshot } from '../gateway/src/resources/snapshot.ts';
import { benchManifests } from './lib/manifests.ts';
import { BENCH_MODELS } from './lib/scenarios.ts';

export interface Phases {
  keys: number;
  megabytes: number;
  yamlMs: number;
  validateMs: number;
  /** null when skipped (above --manifests-max). */
  manifestsMs: number | null;
  snapshotMs: number;
  /** Heap growth, after a full GC, of keeping the snapshot (and nothing else of the load). */
  retainedMB: number;
  /** Heap in use right after parsing, before the loading garbage is collected: a floor for peak RSS. */
  parsePeakHeapMB: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function heapMB(): number {
  gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

export function measure(keys: number, manifestsMax: number): Phases {
  const { yaml } = benchManifests({ upstreamURL: 'http://127.0.0.1:9/v1', models: BENCH_MODELS, keyCount: keys, maxConnections: 2000 });
  const baseline = heapMB();
  let t = performance.now();
  const values = parseAllDocuments(yaml).map((d) => d.toJS());
  const yamlMs = performance.now() - t;
  const parsePeakHeapMB = process.memoryUsage().heapUsed / 1024 / 1024 - baseline;
  t = performance.now();
  const resources = values.map((v) => {
    const result = validateManifest(v);
    if (!result.ok) throw new Error(`invalid bench manifest: ${JSON.stringify(result.problems)}`);
    return result.resource;
  });
  const validateMs = performance.now() - t;
  let manifestsMs: number | null = null;
  if (keys <= manifestsMax) {
    t = performance.now();
    const parsed = parseManifests(yaml, 'bench.yaml');
    manifestsMs = performance.now() - t;
    if (!parsed.ok) throw new Error(parsed.errors[0]);
  }
  values.length = 0;
  t = performance.now();
  const snapshot = new Snapshot(resources);
  const snapshotMs = performance.now() - t;
  resources.length = 0;
  const retainedMB = heapMB() - baseline;
  if (snapshot.keysByHash.size !== keys) throw new Error('snapshot lost keys');
  return { keys, megabytes: yaml.length / 1024 / 1024, yamlMs, validateMs, manifestsMs, snapshotMs, retainedMB, parsePeakHeapMB };
}

export function phasesTable(rows: Phases[]): string {
  const f = (n: number | null, d = 0) => (n === null ? 'skipped' : n.toFixed(d));
  return [
    '| keys | manifests MB | yaml parse ms | validate ms | parseManifests ms | new Snapshot ms | heap after parse MB | retained by snapshot MB |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.keys.toLocaleString('en')} | ${f(r.megabytes, 1)} | ${f(r.yamlMs)} | ${f(r.validateMs)} | ${f(r.manifestsMs)} | ${f(r.snapshotMs, 1)} | ${f(r.parsePeakHeapMB)} | ${f(r.retainedMB, 1)} |`),
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
  const manifestsMax = Number(option('--manifests-max') ?? 20_000);
  const rows = counts.map((n) => measure(n, manifestsMax));
  console.log(args.includes('--json') ? JSON.stringify(rows) : phasesTable(rows));
}
