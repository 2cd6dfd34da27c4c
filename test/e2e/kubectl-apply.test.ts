// The real kubectl against the fake API server: what a platform operator types. apply (client-side
// and --server-side), get with the CRDs' printer columns, describe, patch, wait, and the refusals a
// real API server gives at admission (422 with field paths, strict unknown fields, CEL rules).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rows, startKubectlCluster, type KubectlCluster } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const HASH = `sha256:${'ab'.repeat(32)}`;
const yaml = (...objects: object[]) => objects.map((o) => `---\n${JSON.stringify(o)}\n`).join('');

const upstream = (name: string, spec: object = {}) => ({ apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { baseURL: 'https://api.openai.com/v1', ...spec } });
const model = (name: string, spec: object = {}) => ({ apiVersion: API, kind: 'Model', metadata: { name }, spec: { targets: [{ upstream: 'openai' }], ...spec } });
const plan = { apiVersion: API, kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['gpt-4o', 'text-embedding-3-small'], limits: { requestsPerMinute: 60 } } };
const account = { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { plan: 'pro' } };
const apiKey = (name: string, spec: object = {}) => ({ apiVersion: API, kind: 'ApiKey', metadata: { name }, spec: { account: 'acme', keyHash: HASH, ...spec } });
const readyStatus = (reason: string, extra: object = {}) => ({
  status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason, message: 'all good', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 }], ...extra },
});

let cluster: KubectlCluster;

beforeAll(async () => {
  cluster = await startKubectlCluster();
});
afterAll(() => cluster?.close());

describe('kubectl apply against the fake API server', () => {
  it('client-side apply creates every kind, reports unchanged on a second run, and configured (generation 2) on a change', async () => {
    const manifests = yaml(upstream('openai'), model('gpt-4o'), plan, account, apiKey('acme-app'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'openai' }, stringData: { apiKey: 'sk-not-a-real-key' } });
    const first = await cluster.ok(['apply', '-f', '-'], manifests);
    expect(first.trim().split('\n')).toEqual([
      'upstream.tollgate.dev/openai created',
      'model.tollgate.dev/gpt-4o created',
      'plan.tollgate.dev/pro created',
      'account.tollgate.dev/acme created',
      'apikey.tollgate.dev/acme-app created',
      'secret/openai created',
    ]);
    // kubectl found the kinds through aggregated discovery (no per-group-version documents) and read
    // the group's OpenAPI v3 to learn that the server validates (fieldValidation) and how to patch.
    const paths = cluster.kube.requests.map((r) => r.path);
    expect(paths).toEqual(expect.arrayContaining(['/api', '/apis', '/openapi/v3', '/openapi/v3/apis/tollgate.dev/v1alpha1']));
    expect(paths).not.toContain('/apis/tollgate.dev/v1alpha1');
    expect(cluster.kube.requests.find((r) => r.method === 'POST' && r.path.endsWith('/upstreams'))!.query).toMatchObject({ fieldValidation: 'Strict', fieldManager: 'kubectl-client-side-apply' });
    const second = await cluster.ok(['apply', '-f', '-'], manifests);
    expect(second).toContain('upstream.tollgate.dev/openai unchanged');
    expect(second).toContain('apikey.tollgate.dev/acme-app unchanged');

    const changed = await cluster.ok(['apply', '-f', '-'], yaml(upstream('openai', { maxConnections: 8 })));
    expect(changed.trim()).toBe('upstream.tollgate.dev/openai configured');
    const stored = JSON.parse(await cluster.ok(['get', 'upstream', 'openai', '-o', 'json']));
    expect(stored.metadata.generation).toBe(2);
    expect(stored.spec.maxConnections).toBe(8);
    expect(JSON.parse(stored.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).spec.maxConnections).toBe(8);
    // The client-side apply was a merge patch computed by kubectl, then recorded as its manager.
    expect(cluster.kube.requests.some((r) => r.method === 'PATCH' && r.contentType === 'application/merge-patch+json' && r.query.fieldManager === 'kubectl-client-side-apply')).toBe(true);
    // Structural defaults from the CRD are written into the object, as the API server does.
    const stored4o = JSON.parse(await cluster.ok(['get', 'model', 'gpt-4o', '-o', 'json']));
    expect(stored4o.spec.targets).toEqual([{ upstream: 'openai', priority: 0, weight: 1 }]);
  });

  it('server-side apply records kubectl as the field manager, refuses a conflict with another manager, and takes the field with --force-conflicts', async () => {
    const created = await cluster.ok(['apply', '--server-side', '-f', '-'], yaml(upstream('azure', { baseURL: 'https://azure.example/v1' })));
    expect(created.trim()).toBe('upstream.tollgate.dev/azure serverside-applied');
    const applied = JSON.parse(await cluster.ok(['get', 'upstream', 'azure', '-o', 'json', '--show-managed-fields']));
    expect(applied.metadata.managedFields).toEqual([expect.objectContaining({ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:baseURL': {} } } })]);

    await cluster.ok(['patch', 'upstream', 'azure', '--type', 'merge', '-p', '{"spec":{"baseURL":"https://moved.example/v1"}}']);
    const conflict = await cluster.run(['apply', '--server-side', '-f', '-'], yaml(upstream('azure', { baseURL: 'https://azure.example/v1' })));
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl-patch" using tollgate.dev/v1alpha1: .spec.baseURL');

    await cluster.ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], yaml(upstream('azure', { baseURL: 'https://azure.example/v1', maxConnections: 4 })));
    const forced = JSON.parse(await cluster.ok(['get', 'upstream', 'azure', '-o', 'json', '--show-managed-fields']));
    expect(forced.spec).toEqual({ baseURL: 'https://azure.example/v1', maxConnections: 4 });
    expect(forced.metadata.managedFields.map((m: { manager: string }) => m.manager)).toEqual(['kubectl']);

    // A field the manager stops applying is removed.
    await cluster.ok(['apply', '--server-side', '-f', '-'], yaml(upstream('azure', { baseURL: 'https://azure.example/v1' })));
    expect(JSON.parse(await cluster.ok(['get', 'upstream', 'azure', '-o', 'json'])).spec).toEqual({ baseURL: 'https://azure.example/v1' });
  });

  it('a bad manifest is refused at apply time with the field paths and the reasons', async () => {
    const bad = yaml(upstream('bad', { baseURL: 'ftp://example.com', maxConnections: 0, timeouts: { connectMs: 5000, totalMs: 1000 } }));
    const refused = await cluster.run(['apply', '-f', '-'], bad);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('The Upstream "bad" is invalid');
    expect(refused.stderr).toContain(`spec.baseURL: Invalid value: "ftp://example.com": spec.baseURL in body should match '^https?://'`);
    expect(refused.stderr).toContain('spec.maxConnections: Invalid value: 0: spec.maxConnections in body should be greater than or equal to 1');
    // The cross-field rule is CEL (x-kubernetes-validations), pointed at the field it names.
    expect(refused.stderr).toContain('spec.timeouts.connectMs: Invalid value: "object": connectMs must not exceed totalMs');

    const noKey = await cluster.run(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'ApiKey', metadata: { name: 'nokey' }, spec: { account: 'acme' } }));
    expect(noKey.stderr).toMatch(/spec: Invalid value: "object": either keyHash .* or secretName .* is required/);
    const missing = await cluster.run(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Model', metadata: { name: 'empty' }, spec: { targets: [] } }));
    expect(missing.stderr).toContain('spec.targets: Invalid value: 0: spec.targets in body should have at least 1 items');
    const required = await cluster.run(['apply', '-f', '-'], yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'nomodels' }, spec: {} }));
    expect(required.stderr).toContain('spec.models: Required value');
    const badName = await cluster.run(['apply', '-f', '-'], yaml(upstream('Not_A_Name')));
    expect(badName.stderr).toContain('metadata.name: Invalid value: "Not_A_Name"');

    // Nothing of it was stored.
    const names = JSON.parse(await cluster.ok(['get', 'upstreams,apikeys,models,plans', '-o', 'json'])).items.map((o: { metadata: { name: string } }) => o.metadata.name);
    expect(names).not.toEqual(expect.arrayContaining(['bad']));
    expect(names.some((n: string) => ['bad', 'nokey', 'empty', 'nomodels'].includes(n))).toBe(false);
  });

  it('unknown fields: refused under kubectl strict validation, pruned with a warning when validation is off', async () => {
    const typo = yaml({ apiVersion: API, kind: 'Plan', metadata: { name: 'typo' }, spec: { models: ['*'], limits: { requestPerMinute: 5 } } });
    const strict = await cluster.run(['apply', '-f', '-'], typo);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('strict decoding error: unknown field "spec.limits.requestPerMinute"');
    const warned = await cluster.run(['apply', '--validate=warn', '-f', '-'], typo);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('unknown field "spec.limits.requestPerMinute"');
    expect(JSON.parse(await cluster.ok(['get', 'plan', 'typo', '-o', 'json'])).spec).toEqual({ models: ['*'], limits: {} });
  });

  it('get shows the printer columns from status, -o wide the extra ones, and short names work', async () => {
    await cluster.ok(['patch', 'upstream', 'openai', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify(readyStatus('Probed', { reachable: true, latencyMs: 42 }))]);
    const [row] = rows(await cluster.ok(['get', 'tgup', 'openai']));
    expect(Object.keys(row)).toEqual(['NAME', 'URL', 'REACHABLE', 'READY', 'REASON', 'AGE']);
    expect(row).toMatchObject({ NAME: 'openai', URL: 'https://api.openai.com/v1', REACHABLE: 'true', READY: 'True', REASON: 'Probed' });
    expect(row.AGE).toMatch(/^\d+s$/);
    expect(rows(await cluster.ok(['get', 'upstream', 'openai', '-o', 'wide']))[0]).toMatchObject({ LATENCY: '42' });

    await cluster.ok(['patch', 'account', 'acme', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify(readyStatus('Reconciled', { usage: { month: '2026-01', inputTokens: 1, outputTokens: 2, requests: 1, summary: '3 tokens' } }))]);
    expect(rows(await cluster.ok(['get', 'tgaccount']))[0]).toMatchObject({ NAME: 'acme', PLAN: 'pro', USAGE: '3 tokens', READY: 'True', REASON: 'Reconciled' });
    await cluster.ok(['patch', 'apikey', 'acme-app', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify(readyStatus('Active', { phase: 'Active' }))]);
    expect(rows(await cluster.ok(['get', 'tgkey']))[0]).toMatchObject({ NAME: 'acme-app', ACCOUNT: 'acme', STATUS: 'Active', READY: 'True' });
    expect(rows(await cluster.ok(['get', 'tgplan']))[0]).toMatchObject({ NAME: 'pro', MODELS: '["gpt-4o","text-embedding-3-small"]' });
    expect(rows(await cluster.ok(['get', 'tgm']))[0]).toMatchObject({ NAME: 'gpt-4o', UPSTREAMS: 'openai' });
    // kubectl asked for a server-side Table: the columns are the CRD's, computed here.
    expect(cluster.kube.requests.some((r) => r.path.endsWith('/upstreams/openai') && r.method === 'GET')).toBe(true);
  });

  it('get --watch prints a row per change, from Tables the server streams', async () => {
    await cluster.ok(['apply', '-f', '-'], yaml(upstream('watched')));
    const watchesBefore = cluster.kube.requests.filter((r) => r.query.watch === 'true' && r.path.endsWith('/upstreams')).length;
    const watching = cluster.run(['get', 'upstream', 'watched', '--watch', '--request-timeout=10s']);
    await waitFor(() => cluster.kube.requests.filter((r) => r.query.watch === 'true' && r.path.endsWith('/upstreams')).length > watchesBefore, 10_000, 'kubectl get --watch to watch');
    await cluster.ok(['patch', 'upstream', 'watched', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify(readyStatus('Probed', { reachable: true }))]);
    const watched = rows((await watching).stdout);
    expect(watched.map((r) => [r.NAME, r.REACHABLE, r.READY])).toEqual([
      ['watched', '', ''],
      ['watched', 'true', 'True'],
    ]);
  });

  it('status is written only through /status, with its schema enforced; spec changes bump the generation', async () => {
    const ignored = await cluster.ok(['patch', 'upstream', 'openai', '--type', 'merge', '-p', '{"status":{"reachable":false}}']);
    expect(ignored.trim()).toBe('upstream.tollgate.dev/openai patched (no change)');
    const refused = await cluster.run(['patch', 'apikey', 'acme-app', '--subresource', 'status', '--type', 'merge', '-p', '{"status":{"phase":"Bogus"}}']);
    expect(refused.stderr).toContain('status.phase: Unsupported value: "Bogus": supported values: "Pending", "Active", "Expired", "Revoked"');
    const badCondition = await cluster.run(['patch', 'upstream', 'openai', '--subresource', 'status', '--type', 'merge', '-p', '{"status":{"conditions":[{"type":"Ready","status":"Maybe"}]}}']);
    expect(badCondition.stderr).toContain('status.conditions[0].status: Unsupported value: "Maybe"');
    expect(badCondition.stderr).toContain('status.conditions[0].reason: Required value');

    const before = JSON.parse(await cluster.ok(['get', 'apikey', 'acme-app', '-o', 'json']));
    await cluster.ok(['patch', 'apikey', 'acme-app', '--type', 'merge', '-p', '{"metadata":{"labels":{"team":"a"}}}']);
    expect(JSON.parse(await cluster.ok(['get', 'apikey', 'acme-app', '-o', 'json'])).metadata.generation).toBe(before.metadata.generation);
    await cluster.ok(['patch', 'apikey', 'acme-app', '--type', 'merge', '-p', '{"spec":{"revoked":true}}']);
    const after = JSON.parse(await cluster.ok(['get', 'apikey', 'acme-app', '-o', 'json']));
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.status.phase).toBe('Active');
  });

  it('describe shows spec, status conditions and the object\'s Events', async () => {
    const uid = JSON.parse(await cluster.ok(['get', 'upstream', 'openai', '-o', 'json'])).metadata.uid;
    await cluster.ok(['create', '-f', '-'], yaml({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'openai.probe' },
      involvedObject: { apiVersion: API, kind: 'Upstream', name: 'openai', namespace: cluster.namespace, uid },
      reason: 'UpstreamReachable',
      message: 'GET /models answered in 42 ms',
      type: 'Normal',
      source: { component: 'tollgate-operator' },
      count: 1,
      firstTimestamp: '2026-01-01T00:00:00Z',
      lastTimestamp: '2026-01-01T00:00:00Z',
    }));
    // One recorded through events.k8s.io/v1: the same stored Event, so describe (core/v1) shows it too.
    await cluster.ok(['create', '-f', '-'], yaml({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'openai.credentials' },
      regarding: { apiVersion: API, kind: 'Upstream', name: 'openai', namespace: cluster.namespace, uid },
      reason: 'CredentialsRefused',
      note: 'GET /models answered 401',
      type: 'Warning',
      action: 'Probe',
      reportingController: 'tollgate.dev/operator',
      reportingInstance: 'tollgate-operator-0',
      eventTime: '2026-01-01T00:00:01.000000Z',
    }));
    expect(JSON.parse(await cluster.ok(['get', 'events.v1.', 'openai.credentials', '-o', 'json']))).toMatchObject({ apiVersion: 'v1', involvedObject: { name: 'openai' }, message: 'GET /models answered 401', reportingComponent: 'tollgate.dev/operator' });
    const described = await cluster.ok(['describe', 'upstream', 'openai']);
    expect(described).toMatch(/Warning\s+CredentialsRefused\s+.*GET \/models answered 401/);
    expect(described).toMatch(/Name:\s+openai/);
    expect(described).toMatch(/Base URL:\s+https:\/\/api\.openai\.com\/v1/);
    expect(described).toMatch(/Reason:\s+Probed/);
    expect(described).toMatch(/Normal\s+UpstreamReachable\s+.*tollgate-operator\s+GET \/models answered in 42 ms/);
    // kubectl get events prints the API server's Event columns: no NAME, OBJECT as kind/name.
    const events = rows(await cluster.ok(['get', 'events']));
    expect(Object.keys(events[0])).toEqual(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(events.map((e) => [e.TYPE, e.REASON, e.OBJECT])).toEqual([
      ['Warning', 'CredentialsRefused', 'upstream/openai'],
      ['Normal', 'UpstreamReachable', 'upstream/openai'],
    ]);
    // kubectl found the Events with a field selector on the involved object.
    expect(cluster.kube.requests.some((r) => r.path.endsWith('/events') && /involvedObject\.name=openai/.test(r.query.fieldSelector ?? ''))).toBe(true);
  });

  it('wait --for=condition=Ready returns once the condition is written, and times out while it is not', async () => {
    await cluster.ok(['apply', '-f', '-'], yaml(model('slow')));
    const notYet = await cluster.run(['wait', '--for=condition=Ready', 'model/slow', '--timeout=1s']);
    expect(notYet.code).not.toBe(0);
    expect(notYet.stderr).toContain('timed out waiting for the condition');

    const watchesBefore = cluster.kube.requests.filter((r) => r.query.watch === 'true' && /metadata\.name=slow/.test(r.query.fieldSelector ?? '')).length;
    const waiting = cluster.run(['wait', '--for=condition=Ready', 'model/slow', '--timeout=20s']);
    // kubectl lists and then watches the one object by a field selector; write once it is watching.
    await waitFor(() => cluster.kube.requests.filter((r) => r.query.watch === 'true' && /metadata\.name=slow/.test(r.query.fieldSelector ?? '')).length > watchesBefore, 10_000, 'kubectl to watch model/slow');
    await cluster.ok(['patch', 'model', 'slow', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify(readyStatus('TargetsAvailable'))]);
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(done.stdout.trim()).toBe('model.tollgate.dev/slow condition met');
  });
});
