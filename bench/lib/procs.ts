// Child processes under test and what the kernel says about them. CPU and memory come from /proc,
// so the same numbers are read for the floor, the fake upstream and Tollgate, whatever they run.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { openSync, readdirSync, readFileSync, writeFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux that Node supports.

export interface Service {
  name: string;
  pid: number;
  port: number;
  origin: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
// Whatever happens to the runner, nothing it started outlives it.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of live) child.kill('SIGKILL');
    process.exit(130);
  });
}

function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
}

async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** A bench script (upstream.ts, floor.ts) in its own Node process; it reports its port over IPC. */
export async function forkService(name: string, script: string, env: Record<string, string>, execArgv: string[] = []): Promise<Service> {
  const child = fork(script, [], { env: { ...process.env, ...env, PORT: '0' }, execArgv: [...process.execArgv, ...execArgv], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  track(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port?: number }) => (message.port ? resolve(message.port) : reject(new Error(`${name}: bad ready message`))));
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it was ready`)));
  });
  return { name, pid: child.pid!, port, origin: `http://127.0.0.1:${port}`, child, stop: () => stopChild(child) };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * --pin: the CPUs every gateway is bound to (taskset), the load generator, upstream and sink being
 * bound to the others. On a small machine the scheduler otherwise moves the gateway onto the core
 * the harness is busy on, and its CPU per request moves with that from run to run.
 */
export const pinning: { tollgate: string | null } = { tollgate: null };

/** Binds a process and all its threads (those it starts later inherit it) to `cpus` (a taskset list). */
export function pinProcess(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The Node.js options production runs the gateway with (charts/tollgate/values.yaml, gateway.nodeOptions). */
export const PRODUCTION_NODE_OPTIONS = '--max-semi-space-size=8';

export interface TollgateProcess extends Service {
  /** Milliseconds from spawn to the first 200 from /readyz (the snapshot is built before listening). */
  readyMs: number;
  logFile: string;
}

/**
 * `node gateway/src/main.ts` as in production (LOG_LEVEL info, JSON logs on stdout, here into a file),
 * on a manifests file written by the runner. Resolves when /readyz answers 200, or rejects after
 * `readyTimeoutMs` (and kills the process).
 */
export async function startTollgate(options: {
  name: string;
  root: string;
  configFile: string;
  dataDir: string;
  logFile: string;
  env: Record<string, string>;
  nodeArgs?: string[];
  readyTimeoutMs: number;
}): Promise<TollgateProcess> {
  const port = await freePort();
  const log = openSync(options.logFile, 'a');
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), 'gateway/src/main.ts'], {
    cwd: options.root,
    env: {
      ...process.env,
      // Several gateways run at once: each metrics listener on a free port (variants may say `off`).
      TOLLGATE_METRICS_PORT: '0',
      ...options.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      TOLLGATE_CONFIG: options.configFile,
      TOLLGATE_DATA_DIR: options.dataDir,
      TOLLGATE_BOOTSTRAP_KEY: 'false',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      // As the Helm chart's gateway.nodeOptions and `npm start`; --node-args come after, and win.
      NODE_OPTIONS: PRODUCTION_NODE_OPTIONS,
    },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  track(child);
  if (pinning.tollgate !== null) pinProcess(child.pid!, pinning.tollgate);
  const origin = `http://127.0.0.1:${port}`;
  const deadline = started + options.readyTimeoutMs;
  let exited = false;
  child.once('exit', () => (exited = true));
  while (true) {
    if (exited) throw new Error(`${options.name} exited before it was ready; see ${options.logFile}`);
    if (performance.now() > deadline) {
      await stopChild(child, 1000);
      throw new Error(`${options.name} was not ready after ${(options.readyTimeoutMs / 1000).toFixed(0)} s`);
    }
    try {
      const response = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // Not listening yet: the snapshot is built before the server listens.
    }
    await sleep(50);
  }
  return { name: options.name, pid: child.pid!, port, origin, child, readyMs: performance.now() - started, logFile: options.logFile, stop: () => stopChild(child, 10_000) };
}

/**
 * CPU seconds (user + system, all threads) the process has used so far: its live threads' in
 * nanoseconds (each thread's schedstat), which a short run at a low rate needs (/proc/PID/stat counts
 * 10 ms ticks, a few percent of such a run), plus, in ticks, what threads that have ended used (the
 * process's ticks less its live threads' ticks).
 */
export function cpuSeconds(pid: number): number {
  const total = statCpuSeconds(`/proc/${pid}/stat`);
  let liveTicks = 0;
  let liveNs = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const ns = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      const ticks = statCpuSeconds(`/proc/${pid}/task/${task}/stat`);
      liveNs += ns;
      liveTicks += ticks;
    }
  } catch {
    // A thread ended while being read: the ticks alone.
    return total;
  }
  return liveNs / 1e9 + Math.max(0, total - liveTicks);
}

/** CPU seconds of the main thread alone (its thread id is the process id): JavaScript, not V8's helpers. */
export function mainThreadCpuSeconds(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e9;
}

/**
 * CPU seconds of each group of the process's live threads, by the name the thread gave itself
 * (/proc/PID/task/TID/comm): the main thread as `main`; V8's helpers, libuv's pool and worker threads
 * under their own names. Threads that have ended are not counted.
 */
export function threadGroupCpuSeconds(pid: number): Map<string, number> {
  const groups = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = task === String(pid) ? 'main' : readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim().replace(/\d+$/, '');
      const ns = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      groups.set(name, (groups.get(name) ?? 0) + ns / 1e9);
    } catch {
      // The thread ended while being read.
    }
  }
  return groups;
}

function statCpuSeconds(file: string): number {
  const stat = readFileSync(file, 'utf8');
  // Fields after the command name, which may itself contain spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function statusField(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

export const rssBytes = (pid: number) => statusField(pid, 'VmRSS');
export const peakRssBytes = (pid: number) => statusField(pid, 'VmHWM');

/** Resets the peak RSS (VmHWM) so the next reading is the peak of what follows. Needs root or ownership. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
