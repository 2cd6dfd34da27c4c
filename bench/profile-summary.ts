// Reads a V8 .cpuprofile (from `node --cpu-prof`) and prints where the time went: the top functions
// by self time, and self time summed by package (node_modules/<name>), gateway file and Node internals.
// Usage: node bench/profile-summary.ts FILE.cpuprofile [--top 30] [--filter gateway/src]
//        node bench/profile-summary.ts FILE.cpuprofile --callers DOMException   (who calls it)
//        node bench/profile-summary.ts FILE.cpuprofile --lines relayAnswer relay.ts   (hot lines; whole profile)
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
  const file = modules !== -1 ? frame.url.slice(modules + '/node_modules/'.length) : frame.url.startsWith('node:') ? frame.url : groupOf(frame);
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

/** The call paths (innermost first, `depth` frames) that lead to samples in functions named `name`. */
export function callersOf(profile: Profile, name: string, depth = 6, window?: { fromUs: number; toUs: number }): Row[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const paths = new Map<string, number>();
  let total = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.fromUs || at > window.toUs)) continue;
    const node = byId.get(profile.samples[i])!;
    if (node.callFrame.functionName !== name) continue;
    total += delta;
    const frames: string[] = [];
    for (let id: number | undefined = node.id; id !== undefined && frames.length < depth; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName === '(root)') break;
      frames.push(`${frame.functionName || '(anonymous)'} ${placeOf(frame)}`);
    }
    const key = frames.join(' ← ');
    paths.set(key, (paths.get(key) ?? 0) + delta);
  }
  return [...paths].map(([path, us]) => ({ name: path, selfMs: us / 1000, share: us / total })).sort((a, b) => b.selfMs - a.selfMs);
}

/** Lines of one function (matched by name and file) with the most samples: where inside it the time goes. */
export function hotLines(profile: Profile, name: string, file: string): Array<{ line: number; ticks: number }> {
  const lines = new Map<number, number>();
  for (const node of profile.nodes as Array<ProfileNode & { positionTicks?: Array<{ line: number; ticks: number }> }>) {
    if (node.callFrame.functionName !== name || !node.callFrame.url.endsWith(file)) continue;
    for (const t of node.positionTicks ?? []) lines.set(t.line, (lines.get(t.line) ?? 0) + t.ticks);
  }
  return [...lines].map(([line, ticks]) => ({ line, ticks })).sort((a, b) => b.ticks - a.ticks);
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
  const callers = option('--callers');
  const lines = option('--lines');
  if (callers) {
    for (const row of callersOf(profile, callers).slice(0, Number(option('--top') ?? 8))) console.log(`${(row.share * 100).toFixed(1).padStart(5)}%  ${row.selfMs.toFixed(0).padStart(6)} ms  ${row.name}`);
  } else if (lines) {
    const fileName = args[args.indexOf('--lines') + 2] ?? '';
    for (const row of hotLines(profile, lines, fileName).slice(0, Number(option('--top') ?? 10))) console.log(`  line ${String(row.line).padStart(4)}: ${row.ticks} samples`);
  } else {
    console.log(formatSummary(summarise(profile), Number(option('--top') ?? 25), option('--filter')));
  }
}
