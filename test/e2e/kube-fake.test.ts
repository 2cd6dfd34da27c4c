// The fake Kubernetes API server keeps the promises of the real one that the gateway's informers
// depend on. Everything here goes over HTTP, as a client would see it.
import { get, type IncomingMessage } from 'node:http';
import { CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import { createKubeClient, listInPages } from '@tollgate/kube';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeKubeApiServer, type FakeKubeApiServer } from '../fakes/kube-apiserver.ts';
import { waitFor } from '../helpers/wait.ts';

const NS = 'team-a';
const UPSTREAMS = `/apis/tollgate.dev/v1alpha1/namespaces/${NS}/upstreams`;
const PLANS = `/apis/tollgate.dev/v1alpha1/namespaces/${NS}/plans`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const SLICES = `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`;
const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;

let kube: FakeKubeApiServer;

beforeEach(async () => {
  kube = await startFakeKubeApiServer({ historyLimit: 50 });
});
afterEach(() => kube.close());

async function call(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const response = await fetch(`${kube.url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': contentType }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
}

const upstream = (name: string, baseURL = 'https://a.example/v1', extra: Record<string, unknown> = {}) => ({
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'Upstream',
  metadata: { name, ...extra },
  spec: { baseURL },
});

interface WatchStream {
  events: Array<{ type: string; object: any }>;
  ended: boolean;
  close(): void;
}

function watch(path: string): Promise<WatchStream> {
  return new Promise((resolve, reject) => {
    const stream: WatchStream = { events: [], ended: false, close: () => undefined };
    const request = get(`${kube.url}${path}`, (response: IncomingMessage) => {
      expect(response.statusCode).toBe(200);
      let buffered = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffered += chunk;
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          stream.events.push(JSON.parse(buffered.slice(0, newline)));
          buffered = buffered.slice(newline + 1);
        }
      });
      response.on('close', () => (stream.ended = true));
      response.on('error', () => (stream.ended = true));
      stream.close = () => request.destroy();
      resolve(stream);
    });
    request.on('error', reject);
  });
}

describe('fake kube-apiserver: objects', () => {
  it('create sets uid, creationTimestamp, generation 1 and a resourceVersion; a second create is 409 AlreadyExists', async () => {
    const created = await call('POST', UPSTREAMS, upstream('openai'));
    expect(created.status).toBe(201);
    expect(created.body.metadata).toMatchObject({ name: 'openai', namespace: NS, generation: 1 });
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Number(created.body.metadata.resourceVersion)).toBeGreaterThan(0);
    expect((await call('GET', `${UPSTREAMS}/openai`)).body).toEqual(created.body);

    const again = await call('POST', UPSTREAMS, upstream('openai'));
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'AlreadyExists', code: 409 });
    expect((await call('GET', `${UPSTREAMS}/missing`)).body).toMatchObject({ reason: 'NotFound', code: 404 });
    expect((await call('POST', UPSTREAMS, { ...upstream('x'), metadata: { name: 'x', namespace: 'other' } })).status).toBe(400);
    expect((await call('POST', UPSTREAMS, upstream('Not_A_Name'))).status).toBe(422);
  });

  it('one global resourceVersion increases across kinds; list reports it in metadata.resourceVersion', async () => {
    const a = await call('POST', UPSTREAMS, upstream('a'));
    const b = await call('POST', PLANS, { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['*'] } });
    const c = await call('POST', SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { apiKey: 'sk-1' } });
    const versions = [a, b, c].map((r) => Number(r.body.metadata.resourceVersion));
    expect(versions).toEqual([...versions].sort((x, y) => x - y));
    expect(new Set(versions).size).toBe(3);
    const list = await call('GET', UPSTREAMS);
    expect(list.body).toMatchObject({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'UpstreamList', metadata: { resourceVersion: String(versions[2]) } });
    expect(list.body.items.map((i: any) => [i.kind, i.metadata.name])).toEqual([['Upstream', 'a']]);
    // Built-in list items carry no apiVersion/kind; stringData became base64 data.
    const secrets = await call('GET', SECRETS);
    expect(secrets.body.items[0].kind).toBeUndefined();
    expect(secrets.body.items[0].data).toEqual({ apiKey: Buffer.from('sk-1').toString('base64') });
    expect(secrets.body.items[0].stringData).toBeUndefined();
  });

  it('generation moves on spec changes only; status is ignored on the main resource and written through /status', async () => {
    const created = (await call('POST', UPSTREAMS, upstream('u'))).body;
    const relabelled = (await call('PUT', `${UPSTREAMS}/u`, { ...created, metadata: { ...created.metadata, labels: { tier: 'gold' } } })).body;
    expect(relabelled.metadata.generation).toBe(1);
    expect(Number(relabelled.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));

    const respecced = (await call('PUT', `${UPSTREAMS}/u`, { ...relabelled, spec: { baseURL: 'https://b.example/v1' }, status: { phase: 'ignored' } })).body;
    expect(respecced.metadata.generation).toBe(2);
    expect(respecced.status).toBeUndefined();

    const status = await call('PUT', `${UPSTREAMS}/u/status`, { ...respecced, spec: { baseURL: 'https://ignored.example/v1' }, status: { observedGeneration: 2 } });
    expect(status.status).toBe(200);
    expect(status.body.metadata.generation).toBe(2);
    expect(status.body.status).toEqual({ observedGeneration: 2 });
    expect(status.body.spec.baseURL).toBe('https://b.example/v1');
    expect((await call('PATCH', `${UPSTREAMS}/u/status`, { status: { reachable: true } }, 'application/merge-patch+json')).body.status).toEqual({ observedGeneration: 2, reachable: true });

    // A write that changes nothing is a no-op: same resourceVersion.
    const current = (await call('GET', `${UPSTREAMS}/u`)).body;
    expect((await call('PUT', `${UPSTREAMS}/u`, current)).body.metadata.resourceVersion).toBe(current.metadata.resourceVersion);
  });

  it('updates with a stale resourceVersion are 409 Conflict; custom resources need one at all', async () => {
    const created = (await call('POST', UPSTREAMS, upstream('u'))).body;
    await call('PUT', `${UPSTREAMS}/u`, { ...created, spec: { baseURL: 'https://b.example/v1' } });
    const stale = await call('PUT', `${UPSTREAMS}/u`, { ...created, spec: { baseURL: 'https://c.example/v1' } });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ reason: 'Conflict', message: expect.stringContaining('the object has been modified') });
    const { resourceVersion: _, ...withoutVersion } = created.metadata;
    expect((await call('PUT', `${UPSTREAMS}/u`, { ...created, metadata: withoutVersion })).status).toBe(422);
    const stalePatch = await call('PATCH', `${UPSTREAMS}/u`, { metadata: { resourceVersion: created.metadata.resourceVersion }, spec: { baseURL: 'https://d.example/v1' } }, 'application/merge-patch+json');
    expect(stalePatch.status).toBe(409);
  });

  it('Leases: optimistic concurrency decides between two would-be holders (409 for the stale one)', async () => {
    const lease = (await call('POST', LEASES, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } })).body;
    const takeover = (holder: string) => call('PUT', `${LEASES}/leader`, { ...lease, spec: { ...lease.spec, holderIdentity: holder, acquireTime: '2026-01-01T00:00:00.000000Z' } });
    const first = await takeover('b');
    const second = await takeover('c');
    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ reason: 'Conflict', details: { name: 'leader', group: 'coordination.k8s.io', kind: 'leases' } });
    expect((await call('GET', `${LEASES}/leader`)).body.spec.holderIdentity).toBe('b');
  });

  it('merge and JSON patches apply; strategic merge is refused for custom resources; delete removes and returns the object', async () => {
    await call('POST', UPSTREAMS, upstream('u', 'https://a.example/v1', { labels: { a: '1', b: '2' } }));
    const merged = await call('PATCH', `${UPSTREAMS}/u`, { metadata: { labels: { b: null, c: '3' } }, spec: { maxConnections: 8 } }, 'application/merge-patch+json');
    expect(merged.body.metadata.labels).toEqual({ a: '1', c: '3' });
    expect(merged.body.spec).toEqual({ baseURL: 'https://a.example/v1', maxConnections: 8 });
    expect(merged.body.metadata.generation).toBe(2);
    const patched = await call('PATCH', `${UPSTREAMS}/u`, [{ op: 'test', path: '/spec/maxConnections', value: 8 }, { op: 'replace', path: '/spec/maxConnections', value: 9 }], 'application/json-patch+json');
    expect(patched.body.spec.maxConnections).toBe(9);
    expect((await call('PATCH', `${UPSTREAMS}/u`, [{ op: 'test', path: '/spec/maxConnections', value: 1 }], 'application/json-patch+json')).status).toBe(422);
    expect((await call('PATCH', `${UPSTREAMS}/u`, { spec: {} }, 'application/strategic-merge-patch+json')).status).toBe(415);

    const deleted = await call('DELETE', `${UPSTREAMS}/u`);
    expect(deleted.status).toBe(200);
    expect(Number(deleted.body.metadata.resourceVersion)).toBeGreaterThan(Number(patched.body.metadata.resourceVersion));
    expect((await call('GET', `${UPSTREAMS}/u`)).status).toBe(404);
    expect((await call('DELETE', `${UPSTREAMS}/u`)).status).toBe(404);
  });

  it('finalizers hold a deleted object until the last one is removed', async () => {
    await call('POST', LEASES, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', finalizers: ['x/y'] }, spec: { holderIdentity: 'a' } });
    const marked = await call('DELETE', `${LEASES}/l`);
    expect(marked.body.metadata.deletionTimestamp).toBeDefined();
    expect((await call('GET', `${LEASES}/l`)).status).toBe(200);
    await call('PATCH', `${LEASES}/l`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    expect((await call('GET', `${LEASES}/l`)).status).toBe(404);
  });

  it('requires the bearer token when configured, and answers 503 while unavailable', async () => {
    const locked = await startFakeKubeApiServer({ token: 'secret-token' });
    try {
      expect((await fetch(`${locked.url}${UPSTREAMS}`)).status).toBe(401);
      expect((await fetch(`${locked.url}${UPSTREAMS}`, { headers: { authorization: 'Bearer secret-token' } })).status).toBe(200);
    } finally {
      await locked.close();
    }
    kube.setAvailable(false);
    expect((await call('GET', UPSTREAMS)).body).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    kube.setAvailable(true);
    expect((await call('GET', UPSTREAMS)).status).toBe(200);
    expect((await call('GET', '/apis/tollgate.dev/v1alpha1/namespaces/x/nothings')).status).toBe(404);
  });
});

describe('fake kube-apiserver: list and watch', () => {
  it('a watch from the list resourceVersion sees ADDED, MODIFIED and DELETED after it, in order', async () => {
    await call('POST', UPSTREAMS, upstream('before'));
    const list = await call('GET', UPSTREAMS);
    const stream = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
    const created = (await call('POST', UPSTREAMS, upstream('after'))).body;
    await call('PATCH', `${UPSTREAMS}/after`, { spec: { maxConnections: 2 } }, 'application/merge-patch+json');
    const deleted = (await call('DELETE', `${UPSTREAMS}/before`)).body;
    await call('POST', PLANS, { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'other-kind' }, spec: { models: [] } });
    await waitFor(() => stream.events.length >= 3);
    expect(stream.events.map((e) => [e.type, e.object.metadata.name])).toEqual([['ADDED', 'after'], ['MODIFIED', 'after'], ['DELETED', 'before']]);
    expect(stream.events[0].object.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    expect(stream.events[2].object.metadata.resourceVersion).toBe(deleted.metadata.resourceVersion);
    stream.close();
  });

  it('without a resourceVersion the watch starts with the current state as ADDED events; built-in objects carry kind', async () => {
    await call('POST', SECRETS, { metadata: { name: 's1' }, data: { k: 'dg==' } });
    const stream = await watch(`${SECRETS}?watch=1`);
    await waitFor(() => stream.events.length === 1);
    expect(stream.events[0]).toMatchObject({ type: 'ADDED', object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' } } });
    stream.close();
  });

  it('replays from an older resourceVersion out of history; 410 Gone (ERROR + Status) once it was compacted', async () => {
    const first = (await call('POST', UPSTREAMS, upstream('a'))).body.metadata.resourceVersion;
    await call('POST', UPSTREAMS, upstream('b'));
    await call('POST', UPSTREAMS, upstream('c'));
    const replay = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${first}`);
    await waitFor(() => replay.events.length === 2);
    expect(replay.events.map((e) => e.object.metadata.name)).toEqual(['b', 'c']);
    replay.close();

    kube.compact();
    const gone = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${first}`);
    await waitFor(() => gone.ended);
    expect(gone.events).toHaveLength(1);
    expect(gone.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, status: 'Failure', message: expect.stringContaining('too old resource version') } });
    // A fresh list's resourceVersion is watchable again.
    const list = await call('GET', UPSTREAMS);
    const fresh = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
    await call('DELETE', `${UPSTREAMS}/a`);
    await waitFor(() => fresh.events.length === 1);
    expect(fresh.events[0].type).toBe('DELETED');
    fresh.close();
  });

  it('the history is bounded: a resourceVersion older than the retained events is 410', async () => {
    const first = (await call('POST', UPSTREAMS, upstream('a'))).body.metadata.resourceVersion;
    for (let i = 0; i < 55; i++) await call('PATCH', `${UPSTREAMS}/a`, { spec: { maxConnections: i + 1 } }, 'application/merge-patch+json');
    const gone = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${first}`);
    await waitFor(() => gone.ended);
    expect(gone.events[0].object.code).toBe(410);
  });

  it('label selectors filter lists and watches; label changes show up as ADDED and DELETED', async () => {
    const selector = encodeURIComponent('kubernetes.io/service-name=gw');
    await call('POST', SLICES, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'gw-1', labels: { 'kubernetes.io/service-name': 'gw' } }, addressType: 'IPv4', endpoints: [] });
    await call('POST', SLICES, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'other-1', labels: { 'kubernetes.io/service-name': 'other' } }, addressType: 'IPv4', endpoints: [] });
    const list = await call('GET', `${SLICES}?labelSelector=${selector}`);
    expect(list.body.items.map((i: any) => i.metadata.name)).toEqual(['gw-1']);
    expect((await call('GET', `${SLICES}?labelSelector=${encodeURIComponent('kubernetes.io/service-name in (gw,other),!missing')}`)).body.items).toHaveLength(2);
    expect((await call('GET', `${SLICES}?labelSelector=${encodeURIComponent('a in (b')}`)).status).toBe(400);

    const stream = await watch(`${SLICES}?watch=true&labelSelector=${selector}&resourceVersion=${list.body.metadata.resourceVersion}`);
    await call('PATCH', `${SLICES}/other-1`, { metadata: { labels: { 'kubernetes.io/service-name': 'gw' } } }, 'application/merge-patch+json');
    await call('PATCH', `${SLICES}/gw-1`, { metadata: { labels: { 'kubernetes.io/service-name': 'moved' } } }, 'application/merge-patch+json');
    await waitFor(() => stream.events.length === 2);
    expect(stream.events.map((e) => [e.type, e.object.metadata.name])).toEqual([['ADDED', 'other-1'], ['DELETED', 'gw-1']]);
    stream.close();
  });

  it('bookmarks only when allowed; timeoutSeconds ends the stream; dropWatches cuts every open watch', async () => {
    const list = await call('GET', UPSTREAMS);
    const rv = list.body.metadata.resourceVersion;
    const withBookmarks = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`);
    const without = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${rv}`);
    await call('POST', PLANS, { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'p' }, spec: { models: [] } });
    await waitFor(() => kube.openWatches === 2);
    kube.bookmark();
    await waitFor(() => withBookmarks.events.length === 1);
    expect(withBookmarks.events[0]).toMatchObject({ type: 'BOOKMARK', object: { kind: 'Upstream', metadata: { resourceVersion: String(Number(rv) + 1) } } });
    expect(without.events).toEqual([]);

    kube.dropWatches();
    await waitFor(() => withBookmarks.ended && without.ended);
    expect(kube.openWatches).toBe(0);

    const timed = await watch(`${UPSTREAMS}?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
    await waitFor(() => timed.ended, 5000);
  });

  it('the official client (@kubernetes/client-node Watch) reads its events', async () => {
    const config = new KubeConfig();
    config.loadFromString(kube.kubeconfig(NS));
    const seen: string[] = [];
    const controller = await new Watch(config).watch(UPSTREAMS, { resourceVersion: '0' }, (phase, object) => seen.push(`${phase} ${object.metadata.name}`), () => undefined);
    await call('POST', UPSTREAMS, upstream('via-client'));
    await waitFor(() => seen.length === 1);
    expect(seen).toEqual(['ADDED via-client']);
    controller.abort();
    expect(kube.requests.some((r) => r.query.watch === 'true' && r.path === UPSTREAMS)).toBe(true);
  });

  it('the shared client lists in pages (limit/continue) at one resourceVersion, and falls back to one list when a token expires', async () => {
    const config = new KubeConfig();
    config.loadFromString(kube.kubeconfig(NS));
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5']) await call('POST', UPSTREAMS, upstream(name));
    const listed = await createKubeClient(config, NS).tollgate('Upstream').list();
    expect(listed.items.map((o) => o.metadata?.name)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    const custom = config.makeApiClient(CustomObjectsApi);
    const page = (options: object) => custom.listNamespacedCustomObject({ group: 'tollgate.dev', version: 'v1alpha1', namespace: NS, plural: 'upstreams', ...options });
    const before = kube.requests.length;
    const paged = await listInPages(page, 2);
    expect(paged.items.map((o) => o.metadata?.name)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect(paged.metadata?.resourceVersion).toBe(String(kube.storage.revision));
    expect(kube.requests.slice(before).map((r) => [r.query.limit, Boolean(r.query.continue)])).toEqual([['2', false], ['2', true], ['2', true]]);

    // Compacted while paging: the token is 410 and the list is taken again, whole.
    let pages = 0;
    const compacting = async (options: object) => {
      if (++pages === 2) kube.compact();
      return page(options);
    };
    const recovered = await listInPages(compacting, 2);
    expect(recovered.items.map((o) => o.metadata?.name)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect(kube.requests.at(-1)!.query).toEqual({});
  });
});
