// Compares two `npm run bench -- --profile` runs scenario by scenario, in microseconds of main-thread
// self time per request, so two gateways profiled at different moments (and throughputs) compare
// fairly: shares move with load, time per request much less.
// Usage: node bench/profile-compare.ts BEFORE_DIR AFTER_DIR [--top 30] [--functions]
// (each DIR a bench/results/profile-*/ folder written by run.ts, with its windows.json)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { summarise, type Profile } from './profile-summary.ts';

interface Window { name: string; target: 'floor' | 'tollgate'; from: number; to: number; file: string }

const args = process.argv.slice(2);
const option = (name: string) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const [beforeDir, afterDir] = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--top'));
if (!beforeDir || !afterDir) {
  console.error('usage: node bench/profile-compare.ts BEFORE_DIR AFTER_DIR [--top N] [--functions]');
  process.exit(2);
}
const top = Number(option('--top') ?? 30);
const byFunction = args.includes('--functions');

function load(dir: string) {
  const windows = JSON.parse(readFileSync(path.join(dir, 'windows.json'), 'utf8')) as Window[];
  const profiles = new Map<string, Profile>();
  const profileOf = (file: string) => {
    let p = profiles.get(file);
    if (!p) { p = JSON.parse(readFileSync(file, 'utf8')) as Profile; profiles.set(file, p); }
    return p;
  };
  return windows.filter((w) => w.target === 'tollgate' && /: (\d+) requests/.test(w.name)).map((w) => {
    const requests = Number(/: (\d+) requests/.exec(w.name)![1]);
    const summary = summarise(profileOf(w.file), { fromUs: w.from, toUs: w.to });
    const rows = byFunction ? summary.functions : summary.groups;
    // Line numbers move between versions of a file: functions are matched by name and file only.
    const perRequest = new Map<string, number>();
    for (const r of rows) {
      const name = byFunction ? r.name.replace(/:\d+$/, '') : r.name;
      perRequest.set(name, (perRequest.get(name) ?? 0) + (r.selfMs * 1000) / requests);
    }
    return { scenario: w.name.replace(/: \d+ requests.*$/, ''), requests, total: ((summary.totalMs - summary.idleMs) * 1000) / requests, perRequest };
  });
}

const before = load(beforeDir);
const after = load(afterDir);
for (const a of after) {
  const b = before.find((x) => x.scenario === a.scenario);
  if (!b) continue;
  console.log(`## ${a.scenario}: ${b.total.toFixed(0)} → ${a.total.toFixed(0)} µs/req (${(a.total / b.total).toFixed(2)}×)`);
  const names = new Set([...a.perRequest.keys(), ...b.perRequest.keys()]);
  const rows = [...names].map((name) => ({ name, before: b.perRequest.get(name) ?? 0, after: a.perRequest.get(name) ?? 0 }));
  rows.sort((x, y) => Math.abs(y.after - y.before) - Math.abs(x.after - x.before));
  for (const r of rows.slice(0, top)) {
    const delta = r.after - r.before;
    console.log(`${(delta >= 0 ? '+' : '') + delta.toFixed(1)}`.padStart(8) + ` µs  ${r.before.toFixed(1).padStart(6)} → ${r.after.toFixed(1).padStart(6)}  ${r.name}`);
  }
  console.log('');
}
