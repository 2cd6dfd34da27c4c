// Reads a V8 .cpuprofile (from `node --cpu-prof`) and prints where the time went: the top functions
// by self time, and self time summed by package (node_modules/<name>), gateway file and Node internals.
// Usage: node bench/profile-summary.ts FILE.cpuprofile [--top 30] [--filter gateway/src]
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Row {
  name: string;
  selfMs: number;
  share: number;
}

export interface Summary {
  totalMs: number;
  idleMs: number;
  functions: Row[];
  groups: Row[];
}

/** Where a frame's code lives: `koa`, `gateway/src/http/auth.ts`, `node:internal/…`, `(gc)`. */
export function groupOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const src = url.indexOf('/gateway/src/');
  if (src !== -1) return url.slice(src + 1);
  const bench = url.indexOf('/bench/');
  if (bench !== -1) return url.slice(bench + 1);
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url;
}

/** A function's file and line, shortened: `koa/lib/application.js:170`, `gateway/src/http/auth.ts:12`. */
function placeOf(frame: CallFrame): string {
  if (!frame.url) return groupOf(frame);
  const modules = frame.url.lastIndexOf('/node_modules/');
  const file = modules !== -1 ? frame.url.slice(modules + '/node_modules/'.length) : groupOf(frame);
  return `${file}:${frame.lineNumber + 1}`;
}

/**
 * Self time per function and per place. `window` (microseconds on the monotonic clock that
 * process.hrtime uses, as V8's profile timestamps do) keeps only the samples taken inside it, so one
 * profile of a whole run can be cut into start-up and each load phase.
 */
export function summarise(profile: Profile, window?: { fromUs: number; toUs: number }): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const from = window?.fromUs ?? -Infinity;
  const to = window?.toUs ?? Infinity;
  let at = profile.startTime;
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < from || at > to) continue;
    totalUs += delta;
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }
  const functions = new Map<string, number>();
  const groups = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const group = groupOf(frame);
    const name = `${frame.functionName || '(anonymous)'} ${placeOf(frame)}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    groups.set(group, (groups.get(group) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const rows = (m: Map<string, number>) =>
    [...m].map(([name, us]) => ({ name, selfMs: us / 1000, share: us / busyUs })).sort((a, b) => b.selfMs - a.selfMs);
  return { totalMs: totalUs / 1000, idleMs: idleUs / 1000, functions: rows(functions), groups: rows(groups) };
}

export function formatSummary(summary: Summary, top = 25, filter?: string): string {
  const lines: string[] = [];
  const busy = summary.totalMs - summary.idleMs;
  lines.push(`profile: ${summary.totalMs.toFixed(0)} ms wall, ${busy.toFixed(0)} ms on the main thread (not idle)`);
  lines.push('', 'self time by place (share of non-idle time):');
  for (const row of summary.groups.slice(0, top)) lines.push(`  ${(row.share * 100).toFixed(1).padStart(5)}%  ${row.selfMs.toFixed(0).padStart(7)} ms  ${row.name}`);
  const functions = filter ? summary.functions.filter((r) => r.name.includes(filter)) : summary.functions;
  lines.push('', `top functions by self time${filter ? ` (matching ${filter})` : ''}:`);
  for (const row of functions.slice(0, top)) lines.push(`  ${(row.share * 100).toFixed(1).padStart(5)}%  ${row.selfMs.toFixed(0).padStart(7)} ms  ${row.name}`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--'));
  if (!file) {
    console.error('usage: node bench/profile-summary.ts FILE.cpuprofile [--top N] [--filter TEXT]');
    process.exit(2);
  }
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i === -1 ? undefined : args[i + 1];
  };
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  console.log(formatSummary(summarise(profile), Number(option('--top') ?? 25), option('--filter')));
}
