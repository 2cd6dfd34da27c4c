// The real kubectl against the fake API server, for what happens around objects rather than in them:
// delete with garbage collection of owned objects (background, foreground, orphan), finalizers
// holding a deletion, list pagination and field selectors, and an API server outage seen as refused
// connections; and the fake run on its own, as `npm run -s fake-apiserver` starts it.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKubectl, ROOT } from '../helpers/cluster.ts';
import { rows, startKubectlCluster, type KubectlCluster } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const HASH = `sha256:${'cd'.repeat(32)}`;
const yaml = (...objects: object[]) => objects.map((o) => `---\n${JSON.stringify(o)}\n`).join('');

let cluster: KubectlCluster;

beforeAll(async () => {
  cluster = await startKubectlCluster();
});
afterAll(() => cluster?.close());

async function uidOf(resource: string, name: string): Promise<string> {
  return JSON.parse(await cluster.ok(['get', resource, name, '-o', 'json'])).metadata.uid;
}

const owner = (kind: string, name: string, uid: string, apiVersion = API) => ({ apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true });

async function names(resource: string): Promise<string[]> {
  return JSON.parse(await cluster.ok(['get', resource, '-o', 'json'])).items.map((o: { metadata: { name: string } }) => o.metadata.name);
}

/** An Account, an ApiKey it owns, and the Secret the ApiKey owns: the chain the operator builds. */
async function ownedChain(prefix: string): Promise<void> {
  await cluster.ok(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Account', metadata: { name: prefix }, spec: {} }));
  const account = await uidOf('account', prefix);
  await cluster.ok(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'ApiKey', metadata: { name: `${prefix}-key`, ownerReferences: [owner('Account', prefix, account)] }, spec: { account: prefix, keyHash: HASH } }));
  const key = await uidOf('apikey', `${prefix}-key`);
  await cluster.ok(['apply', '-f', '-'], yaml({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${prefix}-secret`, ownerReferences: [owner('ApiKey', `${prefix}-key`, key)] }, stringData: { key: 'tg_sk_not_real' } }));
}

describe('kubectl delete, garbage collection and finalizers', () => {
  it('deleting an owner deletes what it owns, transitively (background propagation, kubectl\'s default)', async () => {
    await ownedChain('initech');
    expect(await cluster.ok(['delete', 'account', 'initech'])).toContain('account.tollgate.dev "initech" deleted');
    expect(await names('apikeys')).not.toContain('initech-key');
    expect(await names('secrets')).not.toContain('initech-secret');
    expect(cluster.kube.requests.some((r) => r.method === 'DELETE' && r.path.endsWith('/accounts/initech'))).toBe(true);
  });

  it('--cascade=foreground deletes the dependents first; --cascade=orphan leaves them without the owner reference', async () => {
    await ownedChain('globex');
    await cluster.ok(['delete', 'account', 'globex', '--cascade=foreground']);
    expect(await names('apikeys')).not.toContain('globex-key');
    expect(await names('secrets')).not.toContain('globex-secret');

    await ownedChain('umbrella');
    await cluster.ok(['delete', 'account', 'umbrella', '--cascade=orphan']);
    const orphan = JSON.parse(await cluster.ok(['get', 'apikey', 'umbrella-key', '-o', 'json']));
    expect(orphan.metadata.ownerReferences).toBeUndefined();
    expect(await names('secrets')).toContain('umbrella-secret');
  });

  it('a finalizer holds a deletion (deletionTimestamp set) until it is removed; dependents go with the owner', async () => {
    await ownedChain('hooli');
    await cluster.ok(['patch', 'account', 'hooli', '--type', 'merge', '-p', '{"metadata":{"finalizers":["tollgate.dev/keys"]}}']);
    const marked = await cluster.ok(['delete', 'account', 'hooli', '--wait=false']);
    expect(marked).toContain('deleted');
    const held = JSON.parse(await cluster.ok(['get', 'account', 'hooli', '-o', 'json']));
    expect(held.metadata.deletionTimestamp).toMatch(/Z$/);
    expect(await names('apikeys')).toContain('hooli-key');
    const added = await cluster.run(['patch', 'account', 'hooli', '--type', 'merge', '-p', '{"metadata":{"finalizers":["tollgate.dev/keys","x.example/more"]}}']);
    expect(added.stderr).toContain('no new finalizers can be added if the object is being deleted');

    await cluster.ok(['patch', 'account', 'hooli', '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']);
    expect(await names('accounts')).not.toContain('hooli');
    expect(await names('apikeys')).not.toContain('hooli-key');
    expect(await names('secrets')).not.toContain('hooli-secret');
  });
});

describe('kubectl get: pagination and field selectors', () => {
  it('--chunk-size pages through the list with limit/continue, and sees every object once', async () => {
    const secrets = Array.from({ length: 7 }, (_, i) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `page-${i}`, labels: { set: 'paged' } }, stringData: { n: String(i) } }));
    await cluster.ok(['apply', '-f', '-'], yaml(...secrets));
    const before = cluster.kube.requests.length;
    const listed = rows(await cluster.ok(['get', 'secrets', '-l', 'set=paged', '--chunk-size=3']));
    expect(listed.map((r) => r.NAME)).toEqual(secrets.map((s) => s.metadata.name));
    expect(listed[0]).toMatchObject({ TYPE: 'Opaque', DATA: '1' });
    const pages = cluster.kube.requests.slice(before).filter((r) => r.path.endsWith('/secrets') && r.method === 'GET');
    expect(pages.map((r) => [r.query.limit, Boolean(r.query.continue)])).toEqual([
      ['3', false],
      ['3', true],
      ['3', true],
    ]);
  });

  it('a continue token from before a compaction is 410 Expired', async () => {
    const first = await fetch(`${cluster.kube.url}/api/v1/namespaces/${cluster.namespace}/secrets?labelSelector=set%3Dpaged&limit=2`).then((r) => r.json());
    expect(first.metadata.remainingItemCount).toBe(5);
    const second = await fetch(`${cluster.kube.url}/api/v1/namespaces/${cluster.namespace}/secrets?labelSelector=set%3Dpaged&limit=2&continue=${first.metadata.continue}`).then((r) => r.json());
    expect(second.items.map((s: { metadata: { name: string } }) => s.metadata.name)).toEqual(['page-2', 'page-3']);
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    cluster.kube.compact();
    const expired = await fetch(`${cluster.kube.url}/api/v1/namespaces/${cluster.namespace}/secrets?limit=2&continue=${second.metadata.continue}`);
    expect(expired.status).toBe(410);
    expect(await expired.json()).toMatchObject({ kind: 'Status', reason: 'Expired', code: 410 });
  });

  it('--field-selector on metadata.name and metadata.namespace; an unsupported field is refused', async () => {
    expect(rows(await cluster.ok(['get', 'secrets', '--field-selector', 'metadata.name=page-4'])).map((r) => r.NAME)).toEqual(['page-4']);
    const others = rows(await cluster.ok(['get', 'secrets', '-l', 'set=paged', '--field-selector', 'metadata.name!=page-4,metadata.namespace=kubectl-e2e']));
    expect(others.map((r) => r.NAME)).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-5', 'page-6']);
    const refused = await cluster.run(['get', 'secrets', '--field-selector', 'data.n=1']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('field label not supported: data.n');
  });
});

describe('an API server outage', () => {
  it('kubectl sees refused connections while the server is down, and every object again when it is back on the same port', async () => {
    await cluster.ok(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'survivor' }, spec: { models: ['*'] } }));
    const port = cluster.kube.port;
    await cluster.kube.stopListening();
    const down = await cluster.run(['get', 'plans', '--request-timeout=5s']);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/The connection to the server 127\.0\.0\.1:\d+ was refused/);
    const refused = await fetch(`${cluster.kube.url}/version`).then(
      () => null,
      (error: Error & { cause?: { code?: string } }) => error.cause?.code,
    );
    expect(refused).toBe('ECONNREFUSED');

    await cluster.kube.resumeListening();
    expect(cluster.kube.port).toBe(port);
    expect(rows(await cluster.ok(['get', 'plans'])).map((r) => r.NAME)).toContain('survivor');
  });
});

describe('npm run -s fake-apiserver', () => {
  it('serves on its own, empty until the CRDs are applied, writes a kubeconfig kubectl uses, stops and resumes listening on signals, and exits on SIGTERM', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-fake-apiserver-'));
    const kubeconfig = path.join(dir, 'kubeconfig');
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/fake-apiserver.ts'), '--port', '0', '--kubeconfig', kubeconfig, '--namespace', 'ai'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(output), 30_000, 'the fake API server to listen');
      const kubectl = (args: string[], input = '') =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          const run = execFile(ensureKubectl(), ['--kubeconfig', kubeconfig, ...args], { env: { ...process.env, HOME: dir }, timeout: 30_000 }, (error, stdout, stderr) => resolve({ code: error ? 1 : 0, stdout, stderr }));
          run.stdin!.end(input);
        });
      // It starts empty, as a fresh cluster: the CRDs are installed first, as the docs say.
      expect((await kubectl(['get', 'crds'])).stderr).toContain('No resources found');
      expect((await kubectl(['apply', '-f', path.join(ROOT, 'charts/tollgate/crds')])).stdout).toContain('customresourcedefinition.apiextensions.k8s.io/plans.tollgate.dev created');
      expect((await kubectl(['wait', '--for=condition=Established', 'crd/plans.tollgate.dev', '--timeout=10s'])).code).toBe(0);
      expect((await kubectl(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'standalone' }, spec: { models: ['*'] } }))).stdout).toContain('plan.tollgate.dev/standalone created');
      const listed = JSON.parse((await kubectl(['get', 'plans', '-o', 'json'])).stdout);
      expect(listed.items.map((p: { metadata: { name: string; namespace: string } }) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['ai/standalone']);

      child.kill('SIGUSR2');
      await waitFor(() => output.includes('stopped listening'), 10_000, 'the outage');
      expect((await kubectl(['get', 'plans', '--request-timeout=5s'])).stderr).toMatch(/was refused/);
      child.kill('SIGUSR2');
      await waitFor(() => output.includes('listening again'), 10_000, 'the end of the outage');
      expect((await kubectl(['get', 'plans'])).stdout).toContain('standalone');
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
