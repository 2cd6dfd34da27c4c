// The real kubectl installing CustomResourceDefinitions into the fake API server started empty, as a
// new user does against a fresh cluster: apply the chart's CRDs (client- and server-side), wait for
// Established, use the kinds they define (schema validation, explain), and delete one — its objects
// and its kind go. A CRD of a kind the chart does not have proves nothing is chart-specific.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cluster.ts';
import { rows, startKubectlCluster, type KubectlCluster } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const CRDS = path.join(ROOT, 'charts/tollgate/crds');
const CHART_CRDS = ['accounts.tollgate.dev', 'apikeys.tollgate.dev', 'models.tollgate.dev', 'plans.tollgate.dev', 'upstreams.tollgate.dev'];
const yaml = (...objects: object[]) => objects.map((o) => `---\n${JSON.stringify(o)}\n`).join('');

const widgets = (sizeMaximum: number, names: object = { plural: 'widgets', kind: 'Widget', shortNames: ['wdg'] }) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Cluster',
    names,
    versions: [{
      name: 'v1',
      served: true,
      storage: true,
      additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', required: ['size'], properties: { size: { type: 'integer', maximum: sizeMaximum } } } } } },
    }],
  },
});

let cluster: KubectlCluster;

beforeAll(async () => {
  cluster = await startKubectlCluster('crds-e2e', { crds: [] });
});
afterAll(() => cluster?.close());

const discovered = async (group: string) => (await cluster.ok(['api-resources', `--api-group=${group}`, '-o', 'name'])).trim().split('\n').filter(Boolean);

describe('CustomResourceDefinitions through kubectl, on a fake started empty', () => {
  it('has no Tollgate kinds until the chart CRDs are applied; then they are Established, listed, and their kinds served', async () => {
    expect((await cluster.run(['get', 'crds'])).stderr).toContain('No resources found');
    expect(await discovered('tollgate.dev')).toEqual([]);
    expect((await cluster.run(['get', 'plans'])).stderr).toContain('the server doesn\'t have a resource type "plans"');

    const applied = await cluster.ok(['apply', '-f', CRDS]);
    expect(applied.trim().split('\n')).toEqual(CHART_CRDS.map((name) => `customresourcedefinition.apiextensions.k8s.io/${name} created`));
    // kubectl validated them server-side (fieldValidation=Strict), having found the PATCH parameter in
    // the group's OpenAPI v3 — not client-side from OpenAPI v2, which is what failed before.
    const paths = cluster.kube.requests.map((r) => r.path);
    expect(paths).toContain('/openapi/v3/apis/apiextensions.k8s.io/v1');
    expect(paths.some((p) => p.startsWith('/openapi/v2'))).toBe(false);
    expect(cluster.kube.requests.find((r) => r.method === 'POST' && r.path === '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')!.query).toMatchObject({ fieldValidation: 'Strict' });

    const waited = await cluster.ok(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=10s']);
    expect(waited.trim().split('\n')).toEqual(CHART_CRDS.map((name) => `customresourcedefinition.apiextensions.k8s.io/${name} condition met`));
    const plans = JSON.parse(await cluster.ok(['get', 'crd', 'plans.tollgate.dev', '-o', 'json']));
    expect(plans.status.conditions.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status} ${c.reason}`)).toEqual(['NamesAccepted=True NoConflicts', 'Established=True InitialNamesAccepted']);
    expect(plans.status.acceptedNames).toMatchObject({ plural: 'plans', kind: 'Plan', listKind: 'PlanList', shortNames: ['tgplan'] });
    expect(plans.metadata.finalizers).toEqual(['customresourcecleanup.apiextensions.k8s.io']);
    expect(rows(await cluster.ok(['get', 'crds'])).map((r) => r.NAME)).toEqual(CHART_CRDS);
    expect((await discovered('tollgate.dev')).sort()).toEqual(CHART_CRDS);

    // Applying them again changes nothing; server-side apply takes them as well.
    expect(await cluster.ok(['apply', '-f', CRDS])).toContain('customresourcedefinition.apiextensions.k8s.io/plans.tollgate.dev unchanged');
    expect(await cluster.ok(['apply', '--server-side', '-f', CRDS])).toContain('customresourcedefinition.apiextensions.k8s.io/plans.tollgate.dev serverside-applied');
  });

  it('a resource of each kind is accepted, defaulted and read back; an invalid one is refused with the schema\'s reason', async () => {
    const hash = `sha256:${'ab'.repeat(32)}`;
    const objects = [
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'openai' }, spec: { baseURL: 'https://api.openai.com/v1' } },
      { apiVersion: API, kind: 'Model', metadata: { name: 'gpt-4o' }, spec: { targets: [{ upstream: 'openai' }] } },
      { apiVersion: API, kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['gpt-4o'] } },
      { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { plan: 'pro' } },
      { apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-app' }, spec: { account: 'acme', keyHash: hash } },
    ];
    expect((await cluster.ok(['apply', '-f', '-'], yaml(...objects))).trim().split('\n')).toEqual(['upstream.tollgate.dev/openai created', 'model.tollgate.dev/gpt-4o created', 'plan.tollgate.dev/pro created', 'account.tollgate.dev/acme created', 'apikey.tollgate.dev/acme-app created']);
    const names = (await cluster.ok(['get', 'upstreams,models,plans,accounts,apikeys', '-o', 'name'])).trim().split('\n');
    expect(names).toEqual(['upstream.tollgate.dev/openai', 'model.tollgate.dev/gpt-4o', 'plan.tollgate.dev/pro', 'account.tollgate.dev/acme', 'apikey.tollgate.dev/acme-app']);
    // The CRD's structural defaults are applied, as from a preloaded CRD.
    expect(JSON.parse(await cluster.ok(['get', 'model', 'gpt-4o', '-o', 'json'])).spec.targets).toEqual([{ upstream: 'openai', priority: 0, weight: 1 }]);
    // Printer columns and short names come from the applied CRD.
    expect(rows(await cluster.ok(['get', 'tgplan']))[0]).toMatchObject({ NAME: 'pro', MODELS: '["gpt-4o"]' });

    const refused = await cluster.run(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'broken' }, spec: { models: 'gpt-4o' } }));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('The Plan "broken" is invalid: spec.models: Invalid value: "gpt-4o": spec.models in body must be of type array: "gpt-4o"');
    const unknown = await cluster.run(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'typo' }, spec: { models: ['*'], limit: {} } }));
    expect(unknown.stderr).toContain('strict decoding error: unknown field "spec.limit"');
    expect(await cluster.kube.storage.list(cluster.kube.storage.typeOf(API, 'Plan'), undefined).map((p) => p.metadata.name)).toEqual(['pro']);

    // explain reads the schemas from OpenAPI v3: the custom kind's from its CRD, and the CRD's own.
    expect(await cluster.ok(['explain', 'plan.spec'])).toMatch(/models\s+<\[\]string> -required-/);
    expect(await cluster.ok(['explain', 'crd.spec.names'])).toContain('CustomResourceDefinitionNames indicates the names to serve this');
  });

  it('deleting a CRD deletes its objects, ends its watches and takes its kind out of discovery and OpenAPI', async () => {
    const watch = await fetch(`${cluster.kube.url}/apis/tollgate.dev/v1alpha1/namespaces/crds-e2e/plans?watch=true&resourceVersion=${cluster.kube.storage.revision}`);
    const ended = watch.text();
    expect(await cluster.ok(['delete', 'crd', 'plans.tollgate.dev'])).toContain('customresourcedefinition.apiextensions.k8s.io "plans.tollgate.dev" deleted');
    // The watch saw the plan deleted (by the CRD's cleanup), then ended.
    const events = (await ended).trim().split('\n').map((line) => JSON.parse(line));
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['DELETED pro']);

    expect((await discovered('tollgate.dev')).sort()).toEqual(CHART_CRDS.filter((name) => name !== 'plans.tollgate.dev'));
    const openapi = await (await fetch(`${cluster.kube.url}/openapi/v3/apis/tollgate.dev/v1alpha1`)).json();
    expect(Object.keys(openapi.paths).some((p) => p.includes('/plans'))).toBe(false);
    expect((await fetch(`${cluster.kube.url}/apis/tollgate.dev/v1alpha1/namespaces/crds-e2e/plans`)).status).toBe(404);
    expect(rows(await cluster.ok(['get', 'crds'])).map((r) => r.NAME)).not.toContain('plans.tollgate.dev');

    // Installed again, the kind is back, and empty: its objects went with the CRD.
    await cluster.ok(['apply', '-f', path.join(CRDS, 'tollgate.dev_plans.yaml')]);
    await cluster.ok(['wait', '--for=condition=Established', 'crd/plans.tollgate.dev', '--timeout=10s']);
    expect((await cluster.run(['get', 'plans'])).stderr).toContain('No resources found in crds-e2e namespace.');
  });

  it('any CRD: cluster-scoped kinds, a schema change taking effect, names already in use refused until freed, an invalid CRD refused', async () => {
    expect(await cluster.ok(['apply', '-f', '-'], yaml(widgets(10)))).toContain('customresourcedefinition.apiextensions.k8s.io/widgets.example.com created');
    await cluster.ok(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=10s']);
    expect(await cluster.ok(['apply', '-f', '-'], yaml({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 } }))).toContain('widget.example.com/w created');
    expect(rows(await cluster.ok(['get', 'wdg']))[0]).toMatchObject({ NAME: 'w', SIZE: '3' });
    const tooBig = yaml({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'big' }, spec: { size: 20 } });
    expect((await cluster.run(['apply', '-f', '-'], tooBig)).stderr).toContain('spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10');

    // An update of the CRD changes what the kind accepts.
    expect(await cluster.ok(['apply', '-f', '-'], yaml(widgets(100)))).toContain('customresourcedefinition.apiextensions.k8s.io/widgets.example.com configured');
    await waitFor(async () => (await cluster.run(['apply', '-f', '-'], tooBig)).code === 0, 10_000, 'the raised maximum to be enforced');

    // A second CRD claiming the kind Widget in the same group is stored, but neither named nor established.
    const rival = { ...widgets(1, { plural: 'gadgets', kind: 'Widget' }), metadata: { name: 'gadgets.example.com' } };
    await cluster.ok(['apply', '-f', '-'], yaml(rival));
    await waitFor(async () => JSON.parse(await cluster.ok(['get', 'crd', 'gadgets.example.com', '-o', 'json'])).status?.conditions !== undefined, 10_000, 'the rival CRD to be looked at');
    const conditions = JSON.parse(await cluster.ok(['get', 'crd', 'gadgets.example.com', '-o', 'json'])).status.conditions;
    expect(conditions.map((c: { type: string; status: string; reason: string; message: string }) => `${c.type}=${c.status} ${c.reason}: ${c.message}`)).toEqual(['NamesAccepted=False KindConflict: "Widget" is already in use', 'Established=False NotAccepted: not all names are accepted']);
    expect((await cluster.run(['wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=1s'])).code).not.toBe(0);
    expect(await discovered('example.com')).toEqual(['widgets.example.com']);

    const invalid = { ...widgets(1, { plural: 'things', kind: 'Thing' }), metadata: { name: 'stuff.example.com' } };
    invalid.spec.versions[0].storage = false;
    const refused = await cluster.run(['apply', '-f', '-'], yaml(invalid));
    expect(refused.stderr).toContain('The CustomResourceDefinition "stuff.example.com" is invalid');
    expect(refused.stderr).toContain('metadata.name: Invalid value: "stuff.example.com": must be spec.names.plural+"."+spec.group');
    expect(refused.stderr).toContain('must have exactly one version marked as storage version');

    // Once the kind is free, the rival is accepted.
    await cluster.ok(['delete', 'crd', 'widgets.example.com']);
    await cluster.ok(['wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=10s']);
    expect(await discovered('example.com')).toEqual(['gadgets.example.com']);
    await cluster.ok(['delete', 'crd', 'gadgets.example.com']);
    expect(await discovered('example.com')).toEqual([]);
  });
});
