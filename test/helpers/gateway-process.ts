// A gateway as its own operating-system process (`node gateway/src/main.ts`), for what one process
// cannot show: several replicas sharing a store, and a replica killed with SIGKILL. Each gets its own
// data directory; the port is chosen by the kernel and read from the "listening" log line.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectorURLIn } from './inspector.ts';

const MAIN = fileURLToPath(new URL('../../gateway/src/main.ts', import.meta.url));

export interface GatewayProcess {
  url: string;
  /** The metrics listener (/metrics, /usage), on a free port. */
  metricsURL: string | null;
  /** The inspector's WebSocket address, when the process was started with --inspect (NODE_OPTIONS). */
  inspectorURL: string | null;
  child: ChildProcess;
  logs: Array<Record<string, unknown>>;
  /** Ends the process with a signal and waits for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startGatewayProcess(configFile: string, env: Record<string, string>): Promise<GatewayProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-proc-'));
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', TOLLGATE_CONFIG: configFile, TOLLGATE_DATA_DIR: dataDir, TOLLGATE_BOOTSTRAP_KEY: 'false', LOG_LEVEL: 'info', TOLLGATE_METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  let metricsURL: string | null = null;
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'tollgate gateway listening') {
            metricsURL = (entry.metrics as string | undefined) ?? null;
            resolve(entry.url as string);
          }
        } catch {
          // not a log line
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}) before listening:\n${stderr}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    metricsURL,
    // Node prints it on stderr when the inspector starts, before any module of the gateway loads.
    inspectorURL: inspectorURLIn(stderr),
    child,
    logs,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
