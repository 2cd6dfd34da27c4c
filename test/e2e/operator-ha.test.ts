// The operator as it runs in production: two replicas with one leader on a Lease, hand-over when the
// leader dies, no double writes, the usage roll-up summed over every gateway replica found through
// the gateway Service's EndpointSlices (stand-in replicas serving the fixed GET /usage shape, then two
// real gateway processes), all while the API server drops every watch and compacts its
// history (410 Gone) every second.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, condition, manifests, startCluster, startGatewayProcess, startOperatorProcess, type Cluster, type Proc } from '../helpers/cluster.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

let cluster: Cluster;
let chaos: NodeJS.Timeout | null = null;
const operators: Proc[] = [];

const apply = (...objects: object[]) => cluster.kubectl(['apply', '-f', '-'], manifests(...objects));
const wait = (resource: string, forWhat: string) => cluster.kubectl(['wait', resource, `--for=${forWhat}`, '--timeout=30s']);

/** One gateway replica's GET /usage, in the shape HELPERS.md fixes, with counts the test sets. */
interface UsageReplica {
  port: number;
  counts: Record<string, { inputTokens: number; outputTokens: number; requests: number; spend?: string }>;
  keys?: Record<string, { account: string; inputTokens: number; outputTokens: number; requests: number; spend: string }>;
  scope: 'replica' | 'cluster';
  hits: number;
  close(): Promise<void>;
}

async function startUsageReplica(name: string): Promise<UsageReplica> {
  const replica = { counts: {}, scope: 'replica', hits: 0 } as UsageReplica;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/usage') return res.writeHead(404).end();
    replica.hits += 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ replica: name, scope: replica.scope, month: new Date().toISOString().slice(0, 7), accounts: replica.counts, keys: replica.keys ?? {}, currency: 'USD' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  replica.port = (server.address() as AddressInfo).port;
  replica.close = () => new Promise((resolve) => server.close(() => resolve()));
  return replica;
}

/** The EndpointSlice the EndpointSlice controller would write for one gateway pod of Service `tollgate`. */
function slice(pod: string, metricsPort: number, ready = true) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `tollgate-${pod}`, labels: { 'kubernetes.io/service-name': 'tollgate' } },
    addressType: 'IPv4',
    ports: [{ name: 'metrics', port: metricsPort, protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready }, targetRef: { kind: 'Pod', name: pod, uid: `uid-${pod}` } }],
  };
}

async function metric(proc: Proc, name: string): Promise<number> {
  const text = await (await fetch(`${proc.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && !line.startsWith('#'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Read in process from the fake's storage: a kubectl call takes a second on a busy machine, which the hand-over timings would count. */
async function holder(): Promise<string | undefined> {
  try {
    return (cluster.kube.get('coordination.k8s.io/v1', 'Lease', cluster.namespace, 'tollgate-operator') as { spec?: { holderIdentity?: string } }).spec?.holderIdentity;
  } catch {
    return undefined;
  }
}

const secretPosts = () => cluster.kube.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/secrets')).length;

beforeAll(async () => {
  cluster = await startCluster('tollgate-ha');
  operators.push(await startOperatorProcess(cluster, { POD_NAME: 'operator-a' }));
  await waitFor(async () => (await holder()) === 'operator-a', 20_000, 'operator-a to lead');
  operators.push(await startOperatorProcess(cluster, { POD_NAME: 'operator-b' }));
  // From here on, every watch is cut and the history compacted (410 Gone on resume) again and again.
  let round = 0;
  chaos = setInterval(() => {
    round += 1;
    if (round % 2 === 0) cluster.kube.compact();
    cluster.kube.dropWatches();
  }, 1000);
}, 120_000);

afterAll(async () => {
  if (chaos) clearInterval(chaos);
  for (const proc of operators) await proc.stop('SIGKILL');
  await cluster?.close();
});

describe('operator: two replicas, watches dropped and 410 all along', () => {
  it('only the leader reconciles; both are ready', async () => {
    await apply(
      { apiVersion: API, kind: 'Plan', metadata: { name: 'metered' }, spec: { models: ['service-test'], limits: { tokensPerMonth: 1000 } } },
      { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { plan: 'metered' } },
      { apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-one' }, spec: { account: 'acme', secretName: 'acme-one-key' } },
    );
    await wait('apikey/acme-one', 'condition=Ready');
    await wait('account/acme', 'condition=Ready');
    const [a, b] = operators;
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
    await waitFor(async () => (await fetch(`${b.url}/readyz`)).status === 200, 20_000, 'operator-b ready');
    expect(await metric(a, 'tollgate_operator_leader')).toBe(1);
    expect(await metric(b, 'tollgate_operator_leader')).toBe(0);
    expect(await metric(a, 'tollgate_operator_status_writes_total')).toBeGreaterThan(0);
    expect(await metric(b, 'tollgate_operator_status_writes_total')).toBe(0);
    expect(await metric(b, 'tollgate_operator_reconciles_total')).toBe(0);
  });

  it('rolls usage up from every ready gateway replica into Account.status.usage, and flags the budget', async () => {
    const one = await startUsageReplica('gw-1');
    const two = await startUsageReplica('gw-2');
    try {
      one.counts = { acme: { inputTokens: 100, outputTokens: 20, requests: 2, spend: '1.25' } };
      two.counts = { acme: { inputTokens: 50, outputTokens: 30, requests: 1, spend: '0.100001' } };
      one.keys = { 'acme-one': { account: 'acme', inputTokens: 100, outputTokens: 20, requests: 2, spend: '1.25' } };
      two.keys = { 'acme-one': { account: 'acme', inputTokens: 50, outputTokens: 30, requests: 1, spend: '0.100001' } };
      await apply(slice('gw-1', one.port), slice('gw-2', two.port));
      await waitFor(async () => (await cluster.get('account', 'acme'))?.status?.usage?.inputTokens === 150, 20_000, 'usage summed over both replicas');
      const usage = (await cluster.get('account', 'acme')).status.usage;
      expect(usage).toMatchObject({ month: new Date().toISOString().slice(0, 7), inputTokens: 150, outputTokens: 50, requests: 3, budgetRemaining: 800 });
      expect(usage.resetsAt).toMatch(/^\d{4}-\d{2}-01T00:00:00Z$/);
      expect(await cluster.kubectl(['get', 'account', 'acme'])).toContain('200/1000');
      // Spend summed exactly over the replicas, on the Account and on the key it went through (the Spend columns).
      expect(usage.spend).toBe('1.350001 USD');
      expect(await cluster.kubectl(['get', 'account', 'acme'])).toMatch(/SPEND[\s\S]*1\.350001 USD/);
      await waitFor(async () => (await cluster.get('apikey', 'acme-one'))?.status?.usage?.spend === '1.350001 USD', 20_000, "the key's own spend");
      expect(await cluster.kubectl(['get', 'apikey', 'acme-one'])).toMatch(/SPEND[\s\S]*1\.350001 USD/);

      // It rises as the replicas count more, within the roll-up interval.
      two.counts = { acme: { inputTokens: 900, outputTokens: 30, requests: 5 } };
      await waitFor(async () => (await condition(cluster, 'account', 'acme', 'BudgetExhausted'))?.status === 'True', 20_000, 'BudgetExhausted=True');
      expect((await cluster.get('account', 'acme')).status.usage).toMatchObject({ inputTokens: 1000, requests: 7, budgetRemaining: -50 });
      expect(await condition(cluster, 'account', 'acme', 'Ready')).toMatchObject({ status: 'False', reason: 'BudgetUsedUp' });
      const events = JSON.parse(await cluster.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=acme', '-o', 'json']));
      expect(events.items.map((e: { reason: string }) => e.reason)).toContain('BudgetExhausted');

      // A replica that is not ready is not asked; a cluster-scope answer (shared store) is taken alone.
      await apply(slice('gw-2', two.port, false));
      await waitFor(async () => (await cluster.get('account', 'acme')).status.usage.inputTokens === 100, 20_000, 'only the ready replica counted');
      one.scope = 'cluster';
      one.counts = { acme: { inputTokens: 70, outputTokens: 0, requests: 1 } };
      await apply(slice('gw-2', two.port, true));
      await waitFor(async () => (await cluster.get('account', 'acme')).status.usage.inputTokens === 70, 20_000, 'the cluster answer alone');
    } finally {
      await cluster.kubectl(['delete', 'endpointslice', 'tollgate-gw-1', 'tollgate-gw-2']);
      await one.close();
      await two.close();
    }
  });

  it('the leader dies: the other takes the Lease within its duration and carries on, with no double writes', async () => {
    const [a, b] = operators;
    const postsBefore = secretPosts();
    await a.stop('SIGKILL');
    const killedAt = Date.now();
    await waitFor(async () => (await holder()) === 'operator-b', 10_000, 'operator-b to take the Lease');
    const handOverMs = Date.now() - killedAt;
    // Lease duration 3 s; a candidate checks every retry period (lease/7.5, jittered ±20%).
    expect(handOverMs).toBeLessThan(3000 + 1000);
    expect(await metric(b, 'tollgate_operator_leader')).toBe(1);

    await apply({ apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-two' }, spec: { account: 'acme', secretName: 'acme-two-key' } });
    await wait('apikey/acme-two', 'condition=Ready');
    const lease = await cluster.get('lease', 'tollgate-operator');
    expect(lease.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
    // One Secret written for the new key, none again for the old one, and each key issued once.
    expect(secretPosts() - postsBefore).toBe(1);
    const events = JSON.parse(await cluster.kubectl(['get', 'events', '-o', 'json'])).items.filter((e: { reason: string }) => e.reason === 'KeyIssued');
    expect(events.map((e: any) => e.involvedObject.name).sort()).toEqual(['acme-one', 'acme-two']);
    const first = await cluster.get('apikey', 'acme-one');
    expect(first.status.phase).toBe('Active');
  });

  it('a leader that stops cleanly hands the Lease over at once', async () => {
    const c = await startOperatorProcess(cluster, { POD_NAME: 'operator-c' });
    operators.push(c);
    await waitFor(async () => (await fetch(`${c.url}/readyz`)).status === 200, 20_000, 'operator-c ready');
    const b = operators[1];
    const stoppedAt = Date.now();
    await b.stop('SIGTERM');
    await waitFor(async () => (await holder()) === 'operator-c', 10_000, 'operator-c to lead');
    // Released, not expired: the successor needs no lease duration.
    expect(Date.now() - stoppedAt).toBeLessThan(2500);
    await apply({ apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-three' }, spec: { account: 'acme', secretName: 'acme-three-key', revoked: true } });
    await wait('apikey/acme-three', 'condition=Revoked');
  });
});

describe('operator with gateway processes', () => {
  it('a key issued during watch drops works at the gateway, and stops at once when revoked', async () => {
    const gateway = await startGatewayProcess(cluster);
    try {
      await apply({ apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-gw' }, spec: { account: 'acme', secretName: 'acme-gw-key' } });
      await wait('apikey/acme-gw', 'condition=ResolvedRefs');
      const key = Buffer.from(await cluster.kubectl(['get', 'secret', 'acme-gw-key', '-o', 'jsonpath={.data.apiKey}']), 'base64').toString('utf8');
      const status = async () => (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
      await waitFor(async () => (await status()) === 200, 10_000, 'the key at the gateway');
      await cluster.kubectl(['patch', 'apikey', 'acme-gw', '--type', 'merge', '-p', '{"spec":{"revoked":true}}']);
      await waitFor(async () => (await status()) === 401, 5000, '401 after revocation');
    } finally {
      await gateway.stop();
    }
  });
});

describe('usage through real gateway processes', () => {
  it('Account.status.usage rises with requests made through two gateway replicas, summed', async () => {
    const ports = [await freePort(), await freePort()];
    const gateways = [
      await startGatewayProcess(cluster, { POD_NAME: 'gw-a', TOLLGATE_METRICS_PORT: String(ports[0]), TOLLGATE_METRICS_HOST: '127.0.0.1' }),
      await startGatewayProcess(cluster, { POD_NAME: 'gw-b', TOLLGATE_METRICS_PORT: String(ports[1]), TOLLGATE_METRICS_HOST: '127.0.0.1' }),
    ];
    try {
      await apply(
        { apiVersion: API, kind: 'Account', metadata: { name: 'umbrella' }, spec: {} },
        { apiVersion: API, kind: 'ApiKey', metadata: { name: 'umbrella-app' }, spec: { account: 'umbrella', secretName: 'umbrella-app-key' } },
        slice('gw-a', ports[0]),
        slice('gw-b', ports[1]),
      );
      await wait('apikey/umbrella-app', 'condition=Ready');
      const key = Buffer.from(await cluster.kubectl(['get', 'secret', 'umbrella-app-key', '-o', 'jsonpath={.data.apiKey}']), 'base64').toString('utf8');
      const clients = gateways.map((gateway) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }));
      for (const gateway of gateways) await waitFor(async () => (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200, 10_000, 'the key at the gateway');
      const usage = async () => (await cluster.get('account', 'umbrella'))?.status?.usage;
      const tokens = { inputTokens: 0, outputTokens: 0 };
      const chat = async (client: OpenAI, text: string) => {
        const answer = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: text }] });
        tokens.inputTokens += answer.usage!.prompt_tokens;
        tokens.outputTokens += answer.usage!.completion_tokens;
      };
      await chat(clients[0], 'one through gw-a');
      await chat(clients[1], 'one through gw-b');
      await chat(clients[0], 'and another through gw-a');
      // Every token the SDK was told about, summed over both processes (GET /v1/models counts as a request too).
      await waitFor(async () => (await usage())?.inputTokens === tokens.inputTokens && (await usage())?.outputTokens === tokens.outputTokens, 20_000, 'tokens summed over both gateways');
      const replicas = await Promise.all(ports.map(async (port) => (await (await fetch(`http://127.0.0.1:${port}/usage`)).json()).accounts.umbrella));
      expect(replicas.every((r) => r.inputTokens > 0)).toBe(true);
      const before = await usage();
      expect(before.requests).toBe(replicas[0].requests + replicas[1].requests);
      expect(before.month).toBe(new Date().toISOString().slice(0, 7));

      // One more request through gw-b: the figure rises by exactly that request, within the roll-up interval.
      await chat(clients[1], 'one more');
      await waitFor(async () => (await usage())?.requests === before.requests + 1, 20_000, 'usage to rise');
      expect(await usage()).toMatchObject({ inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens });
    } finally {
      await cluster.kubectl(['delete', 'endpointslice', 'tollgate-gw-a', 'tollgate-gw-b']);
      for (const gateway of gateways) await gateway.stop();
    }
  }, 120_000);
});
