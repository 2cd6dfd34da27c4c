// Redis Sentinel and Redis Cluster for tests, from Debian's redis-server binary: every process on
// free loopback ports with its own temporary directory, never a system service, all removed at the
// end. Readiness is waited on as Redis reports it (the sentinel knows its primary; `cluster info`
// says cluster_state:ok on every node), never slept on.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.ts';
import { spawnRedisServer, startRedis, type TestRedis } from './redis.ts';
import { waitFor } from './wait.ts';

// The data servers require AUTH in both topologies: the gateway's credentials come from its URL.
export const PRIMARY_PASSWORD = 'primary-s3cret';
export const CLUSTER_USER = { name: 'tollgate', password: 'cluster-s3cret' };

export interface TestSentinel {
  /** redis+sentinel://:<password>@127.0.0.1:<sentinel port>/<name> */
  url: string;
  name: string;
  primary: TestRedis;
  close(): Promise<void>;
}

export interface TestCluster {
  /** redis+cluster://<user>:<password>@127.0.0.1:<port>,… (every node as a seed) */
  url: string;
  ports: number[];
  /** One command through redis-cli in cluster mode (-c follows redirections), as the ACL user. */
  cli(...args: string[]): Promise<string>;
  /** redis-cli's arguments to authenticate as the ACL user. */
  auth: string[];
  close(): Promise<void>;
}

export function redisCli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const cli = spawn('redis-cli', ['-p', String(port), '--no-auth-warning', ...args]);
    let out = '';
    cli.stdout.on('data', (chunk) => (out += chunk));
    cli.stderr.resume();
    cli.once('error', reject);
    cli.once('exit', () => resolve(out.trim()));
  });
}


async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** One primary (with a password) and one sentinel watching it (quorum 1). */
export async function startSentinel(name = 'tollgate-primary'): Promise<TestSentinel> {
  const primary = await startRedis({ password: PRIMARY_PASSWORD });
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-sentinel-'));
  const port = await freePort();
  const conf = path.join(dir, 'sentinel.conf');
  // The sentinel rewrites its own file (what it learns), so it lives in the temporary directory.
  await writeFile(conf, [`port ${port}`, 'bind 127.0.0.1', 'protected-mode no', `dir ${dir}`, `sentinel monitor ${name} 127.0.0.1 ${primary.port} 1`, `sentinel auth-pass ${name} ${PRIMARY_PASSWORD}`, `sentinel down-after-milliseconds ${name} 5000`, ''].join('\n'));
  const child = await spawnRedisServer([conf, '--sentinel']);
  await waitFor(async () => (await redisCli(port, 'SENTINEL', 'get-master-addr-by-name', name)).split('\n')[1] === String(primary.port), 10_000, 'the sentinel to know its primary');
  return {
    url: `redis+sentinel://:${PRIMARY_PASSWORD}@127.0.0.1:${port}/${name}`,
    name,
    primary,
    async close() {
      await stop(child);
      await primary.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Three primaries, no replicas, every slot covered; only an ACL user (no default user) gets in. */
export async function startCluster(): Promise<TestCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const auth = ['--user', CLUSTER_USER.name, '--pass', CLUSTER_USER.password];
  try {
    for (let i = 0; i < 3; i++) {
      const nodeDir = path.join(dir, `node-${i}`);
      await mkdir(nodeDir);
      const conf = path.join(nodeDir, 'redis.conf');
      await writeFile(conf, ['user default off', `user ${CLUSTER_USER.name} on >${CLUSTER_USER.password} ~* &* +@all`, ''].join('\n'));
      // The bus port is chosen too: port + 10000, the default, may be taken or out of range.
      const [port, busPort] = [await freePort(), await freePort()];
      const child = await spawnRedisServer([
        conf,
        ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1', '--protected-mode', 'no'],
        ...['--dir', nodeDir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', ''],
        ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'],
      ]);
      children.push(child);
      ports.push(port);
    }
    const created = await new Promise<string>((resolve, reject) => {
      const cli = spawn('redis-cli', ['--user', CLUSTER_USER.name, '--pass', CLUSTER_USER.password, '--no-auth-warning', '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes']);
      let out = '';
      cli.stdout.on('data', (chunk) => (out += chunk));
      cli.stderr.on('data', (chunk) => (out += chunk));
      cli.once('error', reject);
      cli.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`redis-cli --cluster create failed (${code}):\n${out}`))));
    });
    if (!created.includes('All 16384 slots covered')) throw new Error(`cluster not created:\n${created}`);
    // Every node must agree before a client asks any of them for the slot map.
    await waitFor(async () => (await Promise.all(ports.map((p) => redisCli(p, ...auth, 'CLUSTER', 'INFO')))).every((info) => info.includes('cluster_state:ok')), 15_000, 'cluster_state:ok on every node');
  } catch (error) {
    await Promise.all(children.map(stop));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `redis+cluster://${CLUSTER_USER.name}:${CLUSTER_USER.password}@${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    ports,
    cli: (...args) => redisCli(ports[0], ...auth, '-c', ...args),
    auth,
    async close() {
      await Promise.all(children.map(stop));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
