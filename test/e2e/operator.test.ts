// The operator end to end: the fake API server (test/fakes), the operator and the gateway as separate
// processes, driven with the real kubectl and the official openai SDK. Conditions, key Secrets,
// revocation, expiry, cascading deletion, upstream probes and the usage roll-up are all observed the
// way a person would: `kubectl wait`, `kubectl get`, and requests through the gateway. Every wait is
// on a condition with a deadline.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, ROOT, condition, manifests, startCluster, startGatewayProcess, startOperatorProcess, type Cluster, type Proc } from '../helpers/cluster.ts';
import { waitFor } from '../helpers/wait.ts';
import { startFakeAnthropic } from '../fakes/anthropic.ts';

let cluster: Cluster;
let operator: Proc;
let gateway: Proc;
let upstream: FakeProvider;

/** An OpenAI-compatible provider that checks its API key: GET /v1/models answers 401 for any other. */
interface FakeProvider {
  url: string;
  modelsRequests: number;
  close(): Promise<void>;
}

async function startProvider(validKey: string, models: string[]): Promise<FakeProvider> {
  const provider = { url: '', modelsRequests: 0 } as FakeProvider;
  const server: Server = createServer((req, res) => {
    if (req.url === '/v1/models') provider.modelsRequests += 1;
    if (req.headers.authorization !== `Bearer ${validKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }));
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  provider.close = () => new Promise((resolve) => server.close(() => resolve()));
  return provider;
}

const meta = (name: string) => ({ name });
const account = (name: string, plan?: string) => ({ apiVersion: API, kind: 'Account', metadata: meta(name), spec: plan ? { plan } : {} });
const plan = (name: string, models: string[], limits?: object) => ({ apiVersion: API, kind: 'Plan', metadata: meta(name), spec: { models, ...(limits ? { limits } : {}) } });
const model = (name: string, upstreams: string[]) => ({ apiVersion: API, kind: 'Model', metadata: meta(name), spec: { targets: upstreams.map((u) => ({ upstream: u })) } });
const upstreamOf = (name: string, baseURL: string, secret: string) => ({ apiVersion: API, kind: 'Upstream', metadata: meta(name), spec: { baseURL, credentials: { secretRef: { name: secret, key: 'apiKey' } } } });
const secretOf = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: meta(name), type: 'Opaque', stringData: { apiKey: value } });
const issuedKey = (name: string, accountName: string, extra: object = {}) => ({ apiVersion: API, kind: 'ApiKey', metadata: meta(name), spec: { account: accountName, secretName: `${name}-key`, ...extra } });

const apply = (...objects: object[]) => cluster.kubectl(['apply', '-f', '-'], manifests(...objects));
const wait = (resource: string, forWhat: string, timeout = '30s') => cluster.kubectl(['wait', resource, `--for=${forWhat}`, `--timeout=${timeout}`]);

/** The key the operator wrote into the ApiKey's Secret, read as an application would. */
async function keyFromSecret(name: string): Promise<string> {
  const encoded = await cluster.kubectl(['get', 'secret', name, '-o', 'jsonpath={.data.apiKey}']);
  return Buffer.from(encoded, 'base64').toString('utf8');
}

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
async function status(key: string): Promise<number> {
  return (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;
}

beforeAll(async () => {
  cluster = await startCluster();
  upstream = await startProvider('sk-provider-good', ['gpt-4o', 'gpt-4o-mini']);
  operator = await startOperatorProcess(cluster);
  gateway = await startGatewayProcess(cluster);
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await gateway?.stop();
  await upstream?.close();
  await cluster?.close();
});

describe('operator: conditions through kubectl', () => {
  it('apply → every kind Ready, with the probe figures in the Upstream status', async () => {
    await apply(secretOf('openai-key', 'sk-provider-good'), upstreamOf('openai', upstream.url, 'openai-key'), model('gpt-4o', ['openai']), plan('pro', ['gpt-4o', 'service-test']), account('acme', 'pro'));
    await wait('upstream/openai', 'condition=Ready');
    await wait('model/gpt-4o', 'condition=Ready');
    await wait('plan/pro', 'condition=Ready');
    await wait('account/acme', 'condition=Ready');
    const up = await cluster.get('upstream', 'openai');
    expect(up.status).toMatchObject({ reachable: true, models: ['gpt-4o', 'gpt-4o-mini'], observedGeneration: up.metadata.generation });
    expect(up.status.conditions.map((c: { type: string }) => c.type)).toEqual(['Ready', 'ResolvedRefs', 'Reachable', 'CredentialsValid']);
    const m = await cluster.get('model', 'gpt-4o');
    expect(m.status.targets).toEqual([{ upstream: 'openai', model: 'gpt-4o', available: true }]);
    const table = await cluster.kubectl(['get', 'upstreams']);
    expect(table).toMatch(/openai\s/);
  });

  it('a dangling reference is reported on the object that has it, with a message, and heals when the target is applied', async () => {
    await apply(account('globex', 'enterprise'));
    await waitFor(async () => (await condition(cluster, 'account', 'globex', 'ResolvedRefs'))?.status === 'False', 20_000, 'ResolvedRefs=False on the Account');
    const refs = await condition(cluster, 'account', 'globex', 'ResolvedRefs');
    expect(refs).toMatchObject({ reason: 'PlanNotFound' });
    expect(refs!.message).toContain('Plan "enterprise"');
    expect((await condition(cluster, 'account', 'globex', 'Ready'))?.status).toBe('False');
    await apply(plan('enterprise', ['gpt-5']));
    await waitFor(async () => (await condition(cluster, 'plan', 'enterprise', 'ResolvedRefs'))?.reason === 'ModelNotFound', 20_000, 'the Plan reports its missing Model');
    await wait('account/globex', 'condition=Ready');
    await apply(model('gpt-5', ['openai']));
    await wait('plan/enterprise', 'condition=Ready');
  });
});

describe('operator: keys issued into Secrets', () => {
  it('writes a key once into the Secret, its hash into the ApiKey, and the key works at the gateway', async () => {
    await apply(issuedKey('acme-app', 'acme'));
    await wait('apikey/acme-app', 'condition=Ready');
    const key = await keyFromSecret('acme-app-key');
    expect(key).toMatch(/^tg_sk_[A-Za-z0-9_-]{43}$/);
    const apiKey = await cluster.get('apikey', 'acme-app');
    expect(apiKey.spec.keyHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(apiKey.status.phase).toBe('Active');
    expect(JSON.stringify(apiKey)).not.toContain(key);
    const secret = await cluster.get('secret', 'acme-app-key');
    expect(secret.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'ApiKey', name: 'acme-app', uid: apiKey.metadata.uid })]);
    await waitFor(async () => (await status(key)) === 200, 10_000, 'the gateway to accept the issued key');
    const models = await client(key).models.list();
    expect(models.data.map((m) => m.id).sort()).toEqual(['gpt-4o', 'service-test']);
    const answer = await client(key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hello' }] });
    expect(answer.choices[0].message.content).toBeTruthy();
    const events = await cluster.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=acme-app', '-o', 'json']);
    expect(JSON.parse(events).items.map((e: { reason: string }) => e.reason)).toContain('KeyIssued');
    // Written once: a later reconcile does not replace it.
    await apply({ ...issuedKey('acme-app', 'acme'), metadata: { name: 'acme-app', labels: { touched: 'yes' } } });
    await waitFor(async () => (await cluster.get('apikey', 'acme-app')).metadata.labels?.touched === 'yes', 10_000, 'the label');
    expect(await keyFromSecret('acme-app-key')).toBe(key);
    expect(operator.text()).not.toContain(key);
    expect(operator.text()).not.toContain(key.slice(6));
  });

  it('revoked: true → 401 at the gateway within a second, and Revoked in status', async () => {
    const key = await keyFromSecret('acme-app-key');
    expect(await status(key)).toBe(200);
    await cluster.kubectl(['patch', 'apikey', 'acme-app', '--type', 'merge', '-p', '{"spec":{"revoked":true}}']);
    const started = Date.now();
    await waitFor(async () => (await status(key)) === 401, 5000, '401 after revocation');
    expect(Date.now() - started).toBeLessThan(1000);
    await wait('apikey/acme-app', 'condition=Revoked');
    expect((await cluster.get('apikey', 'acme-app')).status.phase).toBe('Revoked');
  });

  it('expiresAt → Expired at that moment (re-queued, no other change needed), with an Event', async () => {
    const expiresAt = new Date(Date.now() + 4000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await apply(issuedKey('acme-short', 'acme', { expiresAt }));
    await wait('apikey/acme-short', 'condition=Ready');
    expect((await condition(cluster, 'apikey', 'acme-short', 'Expired'))?.status).toBe('False');
    await wait('apikey/acme-short', 'condition=Expired');
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect((await condition(cluster, 'apikey', 'acme-short', 'Ready'))).toMatchObject({ status: 'False', reason: 'ExpiresAtPassed' });
    expect(await status(await keyFromSecret('acme-short-key'))).toBe(401);
    const events = JSON.parse(await cluster.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=acme-short', '-o', 'json']));
    expect(events.items.map((e: { reason: string }) => e.reason)).toContain('KeyExpired');
  });

  it('`tollgate keys create -o yaml | kubectl apply -f -` keeps working beside issued keys', async () => {
    const created = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile(process.execPath, [`${ROOT}gateway/src/cli/main.ts`, 'keys', 'create', '--account', 'acme', '--name', 'acme-cli', '-o', 'yaml'], (error, stdout, stderr) => (error ? reject(error) : resolve({ stdout, stderr }))),
    );
    const key = created.stderr.match(/(tg_sk_[A-Za-z0-9_-]+)/)![1];
    await cluster.kubectl(['apply', '-f', '-'], created.stdout);
    await wait('apikey/acme-cli', 'condition=Ready');
    await waitFor(async () => (await status(key)) === 200, 10_000, 'the CLI key at the gateway');
  });

  it('deleting the Account deletes its keys and their Secrets', async () => {
    await apply(account('initech'), issuedKey('initech-app', 'initech'), issuedKey('initech-batch', 'initech'));
    await wait('apikey/initech-app', 'condition=Ready');
    await wait('apikey/initech-batch', 'condition=Ready');
    await waitFor(async () => (await cluster.get('apikey', 'initech-app')).metadata.ownerReferences?.some((r: { kind: string }) => r.kind === 'Account'), 10_000, 'the owner reference');
    const key = await keyFromSecret('initech-app-key');
    await waitFor(async () => (await status(key)) === 200, 10_000, 'the key at the gateway');
    await cluster.kubectl(['delete', 'account', 'initech']);
    await waitFor(async () => (await cluster.get('apikey', 'initech-app')) === null && (await cluster.get('apikey', 'initech-batch')) === null, 20_000, 'the keys to go');
    await waitFor(async () => (await cluster.get('secret', 'initech-app-key')) === null, 20_000, 'the key Secret to go');
    await waitFor(async () => (await status(key)) === 401, 5000, '401 for the deleted key');
    expect(await cluster.get('apikey', 'acme-cli')).not.toBeNull();
  });
});

describe('operator: upstream probes', () => {
  it('an unreachable upstream and refused credentials show in status and in the Model', async () => {
    await apply(secretOf('dead-key', 'sk-provider-good'), upstreamOf('dead', 'http://127.0.0.1:9/v1', 'dead-key'), model('dead-model', ['dead']));
    await waitFor(async () => (await condition(cluster, 'upstream', 'dead', 'Reachable'))?.status === 'False', 20_000, 'Reachable=False');
    expect((await condition(cluster, 'upstream', 'dead', 'Reachable'))!.message).toContain('http://127.0.0.1:9/v1/models');
    await waitFor(async () => (await condition(cluster, 'model', 'dead-model', 'TargetsAvailable'))?.status === 'False', 20_000, 'TargetsAvailable=False');

    await apply(secretOf('wrong-key', 'sk-provider-bad'), upstreamOf('wrong', upstream.url, 'wrong-key'));
    await waitFor(async () => (await condition(cluster, 'upstream', 'wrong', 'CredentialsValid'))?.status === 'False', 20_000, 'CredentialsValid=False');
    expect(await condition(cluster, 'upstream', 'wrong', 'CredentialsValid')).toMatchObject({ reason: 'CredentialsRefused' });
    expect(await condition(cluster, 'upstream', 'wrong', 'Reachable')).toMatchObject({ status: 'True' });
    const events = JSON.parse(await cluster.kubectl(['get', 'events', '-o', 'json']));
    expect(events.items.filter((e: { reason: string }) => e.reason === 'UpstreamUnreachable').map((e: any) => e.involvedObject.name)).toContain('dead');

    // Fixing the Secret heals it: the probe runs again with the new credentials.
    await apply(secretOf('wrong-key', 'sk-provider-good'));
    await wait('upstream/wrong', 'condition=CredentialsValid');
    expect(operator.text()).not.toContain('sk-provider-good');
  });
});

describe("operator: translated providers' probes", () => {
  it("probes an Anthropic upstream with Anthropic's own call and key header; a refused key and a credential that cannot be had are told apart", async () => {
    const anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-probe-good' });
    try {
      const origin = anthropic.url.replace(/\/v1\/?$/, '');
      const claude = (name: string, secret: string) => ({ apiVersion: API, kind: 'Upstream', metadata: meta(name), spec: { provider: 'anthropic', baseURL: origin, credentials: { secretRef: { name: secret, key: 'apiKey' } } } });
      await apply(secretOf('ant-good', 'sk-ant-probe-good'), secretOf('ant-bad', 'sk-ant-nope'), claude('claude-good', 'ant-good'), claude('claude-bad', 'ant-bad'));
      await wait('upstream/claude-good', 'condition=CredentialsValid');
      const good = JSON.parse(await cluster.kubectl(['get', 'upstream', 'claude-good', '-o', 'json']));
      expect(good.status.probeTarget).toBe(`GET ${origin}/v1/models?limit=1000`);
      expect(good.status.models.length).toBeGreaterThan(0);
      expect(anthropic.requests.some((r) => r.path === '/v1/models?limit=1000' && r.headers['x-api-key'] === 'sk-ant-probe-good' && r.headers['anthropic-version'] === '2023-06-01')).toBe(true);
      await wait('upstream/claude-bad', 'condition=CredentialsValid=False');
      expect((await condition(cluster, 'upstream', 'claude-bad', 'CredentialsValid'))?.reason).toBe('CredentialsRefused');

      // Vertex without its service-account key in the operator's environment: nothing to sign a token with.
      await apply({ apiVersion: API, kind: 'Upstream', metadata: meta('vertex-nokey'), spec: { provider: 'vertex', baseURL: origin, vertex: { project: 'p', location: 'us-central1' }, credentials: { env: 'TOLLGATE_TEST_NO_SUCH_VAR' } } });
      await wait('upstream/vertex-nokey', 'condition=CredentialsValid=False');
      const vertex = await condition(cluster, 'upstream', 'vertex-nokey', 'CredentialsValid');
      expect(vertex?.reason).toBe('CredentialsUnavailable');
      expect(vertex?.message).toMatch(/TOLLGATE_TEST_NO_SUCH_VAR/);
      expect(operator.text()).not.toContain('sk-ant-probe-good');
    } finally {
      await cluster.kubectl(['delete', 'upstream', 'claude-good', 'claude-bad', 'vertex-nokey', '--ignore-not-found']);
      await anthropic.close();
    }
  });
});

describe('operator: quiet when nothing changes', () => {
  async function writes(): Promise<Record<string, number>> {
    const text = await (await fetch(`${operator.url}/metrics`)).text();
    const counts: Record<string, number> = {};
    for (const match of text.matchAll(/^tollgate_operator_status_writes_total\{kind="(\w+)"\} (\d+)/gm)) counts[match[1]] = Number(match[2]);
    return counts;
  }

  it('probes keep writing Upstream status, and nothing else is rewritten (no write loops)', async () => {
    const before = await writes();
    // Upstream probes run every ~500 ms and each one writes its latency; every Model reading them is re-checked.
    await waitFor(async () => ((await writes()).Upstream ?? 0) >= (before.Upstream ?? 0) + 6, 20_000, 'six more Upstream status writes');
    const after = await writes();
    for (const kind of ['Plan', 'Account', 'ApiKey']) expect(after[kind], kind).toBe(before[kind]);
    const text = await (await fetch(`${operator.url}/metrics`)).text();
    expect(text).toMatch(/tollgate_operator_reconciles_total\{kind="Model",result="(skipped|unchanged)"\} [1-9]/);
    expect(text).toMatch(/tollgate_operator_queue_depth \d+/);
    expect((await fetch(`${operator.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${operator.url}/readyz`)).status).toBe(200);
  });
});
