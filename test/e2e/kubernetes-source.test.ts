// The gateway on its Kubernetes source, against the fake API server (test/fakes/kube-apiserver.ts)
// and driven with the official openai SDK: objects written to the API are served without a restart,
// invalid ones are refused while the rest serves, 410 Gone and dropped watches converge, secretRef
// credentials reach the upstream and rotate, and the replica count follows EndpointSlices. Every wait
// is on a condition with a deadline, never a sleep.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKubeApiServer, type FakeKubeApiServer, type KubeObject } from '../fakes/kube-apiserver.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import type { KubernetesSource } from '../../gateway/src/resources/kubernetes-source.ts';

const NS = 'tollgate-e2e';
const SERVICE = 'tollgate';
const API = 'tollgate.dev/v1alpha1';

let kube: FakeKubeApiServer;
let gw: TestGateway;
let source: KubernetesSource;

type Manifest = { metadata: Record<string, unknown>; [field: string]: unknown };
const inNamespace = (object: Manifest): KubeObject => ({ ...object, metadata: { ...object.metadata, namespace: NS } }) as KubeObject;
const put = (object: Manifest) => kube.apply(inNamespace(object));
const patch = (kind: string, name: string, body: unknown) => kube.mergePatch(API, kind, NS, name, body);
const remove = (kind: string, name: string) => kube.delete(API, kind, NS, name);

async function modelsFor(key: string): Promise<string[]> {
  const list = await gw.client(key).models.list();
  return list.data.map((m) => m.id);
}

async function status(key: string): Promise<number> {
  return (await raw(gw, 'GET', '/v1/models', { key })).status;
}

/** Waits until the gateway has applied everything the API server holds now. */
async function converged(): Promise<void> {
  await gw.source.reload();
}

/** Starts the real gateway on the Kubernetes source, pointed at the fake through a kubeconfig file. */
async function startGatewayOnKube(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-kube-'));
  const kubeconfig = path.join(dir, 'kubeconfig.yaml');
  await writeFile(kubeconfig, kube.kubeconfig(NS));
  gw = await startTestGateway([], {
    source: 'kubernetes',
    kubernetes: { namespace: NS, serviceName: SERVICE, kubeconfig, relistIntervalMs: 10 * 60_000, debounceMs: 20 },
  });
  source = gw.source as KubernetesSource;
  const stop = gw.stop;
  gw.stop = async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  };
}

describe('Kubernetes source: readiness', () => {
  it('is not ready until every collection has listed, then serves what the API holds', async () => {
    kube = await startFakeKubeApiServer();
    const key = newKey('early', 'acme');
    put(account('acme'));
    put(apiKey(key));
    kube.setAvailable(false);
    await startGatewayOnKube();
    try {
      const before = await raw(gw, 'GET', '/readyz');
      expect(before.status).toBe(503);
      expect(before.json).toMatchObject({ status: 'loading', snapshotGeneration: 0 });
      expect(source.status.waitingFor).toEqual(expect.arrayContaining(['Upstream', 'Model', 'Plan', 'Account', 'ApiKey', 'Secret', 'EndpointSlice']));
      expect(await status(key.key)).toBe(401);

      kube.setAvailable(true);
      await waitFor(async () => (await raw(gw, 'GET', '/readyz')).status === 200, 15_000, '/readyz 200');
      expect(source.status.waitingFor).toEqual([]);
      expect(await modelsFor(key.key)).toEqual(['service-test']);
    } finally {
      await gw.stop();
      await kube.close();
    }
  });
});

describe('Kubernetes source: following the API', () => {
  let upstreamA: FakeUpstream;
  const alice = newKey('alice-key', 'alice');

  beforeAll(async () => {
    kube = await startFakeKubeApiServer();
    upstreamA = await startFakeUpstream('a');
    put(plan('basic', ['cheap-*']));
    put(plan('pro', ['cheap-*', 'smart']));
    put(model('cheap-1', [{ upstream: 'a' }]));
    put(model('smart', [{ upstream: 'a' }]));
    put(account('alice', 'basic'));
    put(apiKey(alice));
    await startGatewayOnKube();
    await source.synced();
  });
  afterAll(async () => {
    await gw.stop();
    await kube.close();
    await upstreamA.close();
  });

  it('a key created through the API works without a restart; revoked or deleted it answers 401', async () => {
    expect(await modelsFor(alice.key)).toEqual(['service-test', 'cheap-1']);
    const bob = newKey('bob-key', 'alice');
    expect(await status(bob.key)).toBe(401);
    put(apiKey(bob));
    await waitFor(async () => (await status(bob.key)) === 200, 10_000, 'the new key to authenticate');

    patch('ApiKey', 'bob-key', { spec: { revoked: true } });
    await waitFor(async () => (await status(bob.key)) === 401, 10_000, 'the revoked key to be refused');
    const carol = newKey('carol-key', 'alice');
    put(apiKey(carol));
    await waitFor(async () => (await status(carol.key)) === 200);
    remove('ApiKey', 'carol-key');
    await waitFor(async () => (await status(carol.key)) === 401, 10_000, 'the deleted key to be refused');
  });

  it('changing the plan (account or plan object) changes the catalogue of the same key at once', async () => {
    patch('Account', 'alice', { spec: { plan: 'pro' } });
    await waitFor(async () => (await modelsFor(alice.key)).includes('smart'), 10_000, 'the pro catalogue');
    patch('Plan', 'pro', { spec: { models: ['smart'] } });
    await waitFor(async () => !(await modelsFor(alice.key)).includes('cheap-1'), 10_000, 'the narrowed plan');
    expect(await modelsFor(alice.key)).toEqual(['service-test', 'smart']);
    patch('Account', 'alice', { spec: { plan: 'basic' } });
    await waitFor(async () => (await modelsFor(alice.key)).includes('cheap-1'));
  });

  it('an invalid object is refused with a log line naming kind, name and field; its last good version and every other object keep serving', async () => {
    // The fake, like an API server with older CRDs installed, stores what the gateway's schema refuses.
    kube.storage.schemaValidation = false;
    put({ apiVersion: API, kind: 'Plan', metadata: { name: 'typo' }, spec: { models: ['*'], limits: { requestPerMinute: 5 } } });
    patch('Account', 'alice', { spec: { plan: 'pro', credit: 'unlimited' } });
    kube.storage.schemaValidation = true;
    const dave = newKey('dave-key', 'alice');
    put(apiKey(dave));
    await waitFor(async () => (await status(dave.key)) === 200, 10_000, 'the valid key beside the invalid objects');
    await converged();

    const refusals = gw.logs.filter((l) => l.msg && String(l.msg).startsWith('Kubernetes object refused'));
    expect(refusals).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'Plan', name: 'typo', field: 'spec.limits.requestPerMinute', reason: 'is not a known field', level: 50 }),
        expect.objectContaining({ kind: 'Account', name: 'alice', field: 'spec.credit', reason: 'is not a known field' }),
      ]),
    );
    expect(String(refusals.find((l) => l.name === 'typo')!.msg)).toContain('it is not served');
    expect(String(refusals.find((l) => l.name === 'alice')!.msg)).toContain('last good version');
    // Alice's last good version (plan basic) keeps serving; the refused change to pro does not apply.
    expect(await modelsFor(alice.key)).toEqual(['service-test', 'cheap-1']);
    expect(source.status.lastError).toEqual(expect.arrayContaining([expect.stringContaining('Plan typo'), expect.stringContaining('Account alice')]));
    // Logged once per resourceVersion, not on every rebuild.
    const before = gw.logs.filter((l) => l.name === 'typo').length;
    put(apiKey(newKey('erin-key', 'alice')));
    await converged();
    expect(gw.logs.filter((l) => l.name === 'typo').length).toBe(before);

    // Fixed objects apply again.
    patch('Account', 'alice', { spec: { credit: null } });
    remove('Plan', 'typo');
    await waitFor(async () => (await modelsFor(alice.key)).includes('smart'), 10_000, 'the fixed account');
    await waitFor(() => source.status.lastError === null);
    patch('Account', 'alice', { spec: { plan: 'basic' } });
    await waitFor(async () => !(await modelsFor(alice.key)).includes('smart'));
  });

  it('410 Gone after an outage: relists and converges, deletions made during the gap included', async () => {
    const stays = newKey('stays-key', 'alice');
    const goes = newKey('goes-key', 'alice');
    put(apiKey(stays));
    put(apiKey(goes));
    await waitFor(async () => (await status(goes.key)) === 200 && (await status(stays.key)) === 200);
    const apiKeyLists = () => kube.requests.filter((r) => r.path.endsWith('/apikeys') && r.query.watch === undefined).length;
    const listsBefore = apiKeyLists();

    // The API server goes away (watches cut, reconnects refused), changes happen, history is compacted.
    kube.setAvailable(false);
    kube.dropWatches();
    remove('ApiKey', 'goes-key');
    const arrives = newKey('arrives-key', 'alice');
    put(apiKey(arrives));
    patch('Plan', 'basic', { spec: { models: ['smart'] } });
    kube.compact();
    // Meanwhile the last good state keeps serving.
    expect(await status(goes.key)).toBe(200);
    kube.setAvailable(true);

    // Each collection relists on its own; wait for all three changes, then check nothing else moved.
    await waitFor(
      async () => (await status(arrives.key)) === 200 && (await status(goes.key)) === 401 && (await modelsFor(alice.key)).join() === 'service-test,smart',
      20_000,
      'the changes made during the gap',
    );
    expect(await status(stays.key)).toBe(200);
    expect(apiKeyLists()).toBeGreaterThan(listsBefore);
    expect(gw.logs.some((l) => l.msg === 'watch history expired (410 Gone); relisting')).toBe(true);
    patch('Plan', 'basic', { spec: { models: ['cheap-*'] } });
    await waitFor(async () => (await modelsFor(alice.key)).includes('cheap-1'));
  });

  it('a dropped watch reconnects from where it was and keeps following', async () => {
    await waitFor(() => kube.openWatches === 7, 10_000, 'seven open watches');
    const watchesBefore = kube.requests.filter((r) => r.query.watch === 'true').length;
    kube.dropWatches();
    await waitFor(() => kube.openWatches === 7, 20_000, 'the watches to reconnect');
    expect(kube.requests.filter((r) => r.query.watch === 'true').length).toBeGreaterThanOrEqual(watchesBefore + 7);
    const frank = newKey('frank-key', 'alice');
    put(apiKey(frank));
    await waitFor(async () => (await status(frank.key)) === 200, 10_000, 'a key created after the reconnect');
  });

  it('secretRef credentials reach the upstream, a rotated Secret applies to the next request, a missing one is a clear 502', async () => {
    // The Secret exists before any Upstream references it, so the gateway first holds it without data.
    put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'provider-a' }, type: 'Opaque', stringData: { apiKey: 'sk-first-0123456789' } });
    put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'unrelated' }, stringData: { token: 'sk-never-held' } });
    await converged();
    put({ apiVersion: API, kind: 'Upstream', metadata: { name: 'a' }, spec: { baseURL: upstreamA.url, credentials: { secretRef: { name: 'provider-a', key: 'apiKey' } } } });
    await waitFor(() => source.secretLookup('provider-a', 'apiKey') === 'sk-first-0123456789', 10_000, 'the referenced Secret');
    expect(source.secretLookup('unrelated', 'token')).toBeUndefined();
    await waitFor(() => gw.store.current.upstreams.has('a'), 10_000, 'the Upstream in the snapshot');

    const client = gw.client(alice.key);
    await client.chat.completions.create({ model: 'cheap-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstreamA.requests.at(-1)!.headers.authorization).toBe('Bearer sk-first-0123456789');

    kube.replace(inNamespace({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'provider-a' }, type: 'Opaque', data: { apiKey: Buffer.from('sk-second-0123456789').toString('base64') } }));
    await waitFor(() => source.secretLookup('provider-a', 'apiKey') === 'sk-second-0123456789', 10_000, 'the rotated Secret');
    await client.chat.completions.create({ model: 'cheap-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstreamA.requests.at(-1)!.headers.authorization).toBe('Bearer sk-second-0123456789');

    kube.delete('v1', 'Secret', NS, 'provider-a');
    await waitFor(() => source.secretLookup('provider-a', 'apiKey') === undefined);
    const failed = await raw(gw, 'POST', '/v1/chat/completions', { key: alice.key, body: { model: 'cheap-1', messages: [{ role: 'user', content: 'hi' }] } });
    expect(failed.status).toBe(502);
    expect(failed.json.error.code).toBe('upstream_credentials_missing');
    expect(gw.logText()).not.toContain('sk-first-0123456789');
    expect(gw.logText()).not.toContain('sk-second-0123456789');
  });

  it('the live replica count follows the ready endpoints of the gateway Service', async () => {
    const seen: number[] = [];
    const unsubscribe = gw.replicas.onChange((n) => seen.push(n));
    const endpoint = (pod: string, ready: boolean) => ({ addresses: [`10.0.0.${pod.length}${pod.charCodeAt(pod.length - 1) % 10}`], conditions: { ready }, targetRef: { kind: 'Pod', name: pod, uid: `uid-${pod}` } });
    const slice = (name: string, service: string, endpoints: unknown[]) => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name, labels: { 'kubernetes.io/service-name': service } }, addressType: 'IPv4', endpoints });
    expect(gw.replicas.current()).toBe(1);
    expect(source.liveReplicas()).toBe(1);

    // Plan limits are shared among live replicas: each enforces its part of the plan.
    const limited = newKey('limited-key', 'limited');
    put(plan('rpm-90', ['cheap-*'], { requestsPerMinute: 90, concurrentRequests: 3 }));
    put(account('limited', 'rpm-90'));
    put(apiKey(limited));
    await waitFor(async () => (await status(limited.key)) === 200, 10_000, 'the limited key');
    const requestLimit = async () => (await raw(gw, 'GET', '/v1/models', { key: limited.key })).headers.get('x-ratelimit-limit-requests');
    expect(await requestLimit()).toBe('90');

    put(slice('tollgate-v4', SERVICE, [endpoint('gw-a', true), endpoint('gw-b', true)]));
    // The same pods again in a second slice (dual-stack), and another Service's slice: neither counts twice.
    put(slice('tollgate-v6', SERVICE, [endpoint('gw-a', true), endpoint('gw-b', true)]));
    put(slice('other-svc', 'other', [endpoint('x-1', true), endpoint('x-2', true), endpoint('x-3', true)]));
    await waitFor(() => gw.replicas.current() === 2, 10_000, 'two replicas');
    put(slice('tollgate-more', SERVICE, [endpoint('gw-c', true), endpoint('gw-d', false)]));
    await waitFor(() => gw.replicas.current() === 3, 10_000, 'three replicas');
    expect(await requestLimit()).toBe('30');
    kube.mergePatch('discovery.k8s.io/v1', 'EndpointSlice', NS, 'tollgate-more', { endpoints: [endpoint('gw-c', false), endpoint('gw-d', true)] });
    kube.delete('discovery.k8s.io/v1', 'EndpointSlice', NS, 'tollgate-v4');
    kube.delete('discovery.k8s.io/v1', 'EndpointSlice', NS, 'tollgate-v6');
    await waitFor(() => gw.replicas.current() === 1 && source.liveReplicas() === 1, 10_000, 'back to one');
    expect(await requestLimit()).toBe('90');
    expect(seen[0]).toBe(2);
    expect(seen).toContain(3);
    expect(seen.at(-1)).toBe(1);
    unsubscribe();
  });

  it('never writes to the Kubernetes API', () => {
    const writes = kube.requests.filter((r) => r.method !== 'GET');
    expect(writes).toEqual([]);
    expect(kube.requests.length).toBeGreaterThan(10);
  });
});
