// Shared mode against Redis Sentinel and Redis Cluster, each made of real redis-server processes:
// the gateway finds the primary through a sentinel (redis+sentinel://), or the slot owners through
// any cluster node (redis+cluster://). On each, two gateway processes run the paths whose scripts
// touch several keys at once (admission with every limit, settlement, usage counts, files) and the
// stored responses, so a key scheme without a shared hash tag fails here with CROSSSLOT.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, newKey, plan, raw, toYaml } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { redisCli, startCluster, startSentinel, type TestCluster, type TestSentinel } from '../helpers/redis-topologies.ts';
import { waitFor } from '../helpers/wait.ts';

// Several accounts, so that on the cluster their keys land on different nodes.
const ACCOUNTS = ['alpha', 'bravo', 'charlie', 'delta'];
const keys = Object.fromEntries(ACCOUNTS.map((name) => [name, newKey(`${name}-key`, name)]));
const RPM = 10;
/** Requests each account makes before its request limit is probed. */
const REQUESTS_BEFORE = 7;

let dir: string;
let configFile: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-topologies-'));
  configFile = path.join(dir, 'tollgate.yaml');
  await writeFile(
    configFile,
    toYaml([plan('metered', ['service-test'], { requestsPerMinute: RPM, tokensPerMinute: 100_000, concurrentRequests: 4, tokensPerMonth: 1_000_000 }), ...ACCOUNTS.map((name) => account(name, 'metered')), ...Object.values(keys).map(apiKey)]),
  );
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const client = (gateway: GatewayProcess, key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
const month = () => new Date().toISOString().slice(0, 7);

/** Limits, budgets, usage, stored responses and files of every account, spread over two gateways. */
async function exerciseSharedMode(gateways: GatewayProcess[], budgetUsed: (account: string) => Promise<number>): Promise<void> {
  const [a, b] = gateways;
  for (const name of ACCOUNTS) {
    const key = keys[name].key;
    // A completion with every limit (concurrency, requests, tokens per minute, monthly budget): one
    // admission script, one settlement script, one usage count.
    const chat = await client(a, key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: `Hello from ${name}` }], max_tokens: 20 });
    expect(chat.usage!.total_tokens).toBeGreaterThan(0);
    await waitFor(async () => (await budgetUsed(name)) === chat.usage!.total_tokens, 10_000, `${name}'s budget settled to its usage`);

    // A stored response on one gateway, read and continued on the other.
    const first = await client(a, key).responses.create({ model: 'service-test', input: 'Remember 42.' });
    expect((await client(b, key).responses.retrieve(first.id)).id).toBe(first.id);
    const second = await client(b, key).responses.create({ model: 'service-test', input: 'Which number?', previous_response_id: first.id });
    expect(second.status).toBe('completed');

    // A file uploaded on one gateway, downloaded and deleted on the other (multi-key scripts).
    const file = await client(b, key).files.create({ file: await toFile(Buffer.from(`bytes of ${name}`), 'f.txt'), purpose: 'user_data' });
    expect(Buffer.from(await (await client(a, key).files.content(file.id)).arrayBuffer()).toString()).toBe(`bytes of ${name}`);
    expect((await client(a, key).files.delete(file.id)).deleted).toBe(true);

    // The request limit holds across both gateways: requests beyond it are refused on either.
    const statuses: number[] = [];
    for (let i = 0; statuses.filter((s) => s === 429).length < 2 && i < 20; i++) statuses.push((await raw(gateways[i % 2], 'GET', '/v1/models', { key })).status);
    expect(statuses.filter((s) => s === 200).length).toBe(RPM - REQUESTS_BEFORE);
    expect(statuses.slice(-2)).toEqual([429, 429]);
  }
  // Usage counts for the whole deployment, on either gateway's metrics port.
  await waitFor(
    async () => {
      const report = await (await fetch(`${b.metricsURL}/usage`)).json();
      return report.scope === 'cluster' && ACCOUNTS.every((name) => report.accounts[name]?.requests >= REQUESTS_BEFORE);
    },
    10_000,
    'usage counted for every account',
  );
  // Nothing failed quietly on the way: a script refused by the cluster (CROSSSLOT) or a degraded
  // store is logged, and the request it belonged to may still have been answered.
  for (const gateway of gateways) expect(gateway.logs.filter((entry) => (entry.level as number) >= 40)).toEqual([]);
}

describe('Redis Sentinel', () => {
  let sentinel: TestSentinel;
  let gateways: GatewayProcess[] = [];
  beforeAll(async () => {
    sentinel = await startSentinel();
    gateways = await Promise.all([0, 1].map(() => startGatewayProcess(configFile, { TOLLGATE_REDIS_URL: sentinel.url, TOLLGATE_REDIS_TIMEOUT_MS: '3000' })));
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill('SIGKILL')));
    await sentinel?.close();
  });

  it('finds the primary through the sentinel and keeps every shared state there', async () => {
    await exerciseSharedMode(gateways, async (name) => Number(await sentinel.primary.cli('HGET', `tollgate:{${name}}:b:${month()}:account:${name}`, 'used')));
  });
});

describe('Redis Cluster', () => {
  let cluster: TestCluster;
  let gateways: GatewayProcess[] = [];
  beforeAll(async () => {
    cluster = await startCluster();
    gateways = await Promise.all([0, 1].map(() => startGatewayProcess(configFile, { TOLLGATE_REDIS_URL: cluster.url, TOLLGATE_REDIS_TIMEOUT_MS: '3000' })));
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.kill('SIGKILL')));
    await cluster?.close();
  });

  it('runs every multi-key script in one slot per call, with accounts spread over the nodes', async () => {
    await exerciseSharedMode(gateways, async (name) => Number(await cluster.cli('HGET', `tollgate:{${name}}:b:${month()}:account:${name}`, 'used')));
    // The accounts' keys are not all on one node: the hash tags spread them.
    const owners = await Promise.all(ACCOUNTS.map(async (name) => Number(await cluster.cli('CLUSTER', 'KEYSLOT', `{${name}}`))));
    const keysPerNode = await Promise.all(cluster.ports.map(async (port) => Number(await redisCli(port, ...cluster.auth, 'DBSIZE'))));
    expect(new Set(owners).size).toBe(ACCOUNTS.length);
    expect(keysPerNode.filter((n) => n > 0).length).toBeGreaterThan(1);
  });
});
