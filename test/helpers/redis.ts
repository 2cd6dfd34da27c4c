// A real redis-server for tests: started on a free loopback port with its own temporary directory,
// never the system service. It can be stopped and started again on the same port (a restart), with
// or without its data (appendonly persistence), and is always removed at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.ts';

export interface TestRedis {
  url: string;
  port: number;
  dir: string;
  /** Stops the server (SIGKILL: no last save, like a crash). Data survives only with `persist`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory. */
  start(): Promise<void>;
  /** Sends one command through redis-cli and returns its output (assertions on raw state). */
  cli(...args: string[]): Promise<string>;
  close(): Promise<void>;
}

/** `password`: the default user's (requirepass), in the URL and in every redis-cli call. */
export async function startRedis(options: { persist?: boolean; password?: string } = {}): Promise<TestRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-redis-'));
  let child: ChildProcess | null = null;
  let port = 0;

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no', '--protected-mode', 'no', '--logfile', ''];
    args.push('--appendonly', options.persist ? 'yes' : 'no');
    if (options.persist) args.push('--appendfsync', 'always');
    if (options.password) args.push('--requirepass', options.password);
    child = await spawnRedisServer(args);
  };

  // A port taken between choosing and binding makes redis-server exit; choose again then.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 4) throw error;
    }
  }

  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };

  return {
    url: options.password ? `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    port,
    dir,
    stop,
    start: launch,
    cli: (...args) =>
      new Promise((resolve, reject) => {
        const cli = spawn('redis-cli', ['-p', String(port), ...(options.password ? ['-a', options.password, '--no-auth-warning'] : []), ...args]);
        let out = '';
        cli.stdout.on('data', (chunk) => (out += chunk));
        cli.once('error', reject);
        cli.once('exit', () => resolve(out.trim()));
      }),
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts redis-server (or a sentinel: `redis-server --sentinel`) with `args` and resolves once it
 * says it is ready; rejects with its output if it exits first.
 */
export async function spawnRedisServer(args: string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections') || output.includes('Sentinel ID is')) {
        child.stdout!.off('data', onData);
        // Keep draining so a chatty server never blocks on a full pipe.
        child.stdout!.resume();
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)));
    child.once('error', reject);
  });
  return child;
}
