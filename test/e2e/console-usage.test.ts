// The account area's usage figures as the chart deploys it: the API served by a gateway process of its
// own (`node gateway/src/main.ts`, console off), the console in this test's process, serving no API
// traffic and sharing nothing with the gateway but HTTP (its usage comes from the gateway Service's
// endpoints, as in the chart's console pods), and the real operator rolling GET /usage up into
// Account.status.usage, all on the fake API server. A priced model
// (EUR, prices chosen so a request costs less than a cent) is used with the official SDK; a real
// Chromium then reads the console: each key's last use and spend come from the gateway replicas, and
// the spend shown (the month's, the key's, the spend chart's) is exactly what GET /usage says and what
// kubectl's SPEND column shows, never a rounded float.
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { formatMoney } from '../../gateway/src/limits/money.ts';
import { generateKey, hashKey } from '../../gateway/src/resources/keys.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { launchChromium } from '../helpers/browser.ts';
import { pino } from 'pino';
import { loadOperatorConfig } from '../../operator/src/config.ts';
import { startOperator, type RunningOperator } from '../../operator/src/operator.ts';
import { API, manifests, startCluster, startGatewayProcess, type Cluster, type Proc } from '../helpers/cluster.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
// Micros per million tokens: 11 prompt and 7 completion tokens (the fake's usage) cost 4,300 micros, 0.0043.
const INPUT_PRICE = 200;
const OUTPUT_PRICE = 300;
const CURRENCY = 'EUR';
const SHOTS = process.env.TOLLGATE_SCREENSHOTS; // a directory: docs/console.md's account page is taken from this run

let cluster: Cluster;
let fake: FakeUpstream;
let api: Proc;
let operator: RunningOperator;
let idp: TestIdp;
let consoleServer: TestGateway;
let browser: Browser;
let base: string;
let metricsPort: number;
const key = generateKey('tg');

beforeAll(async () => {
  cluster = await startCluster('tollgate-console-usage');
  fake = await startFakeUpstream('up');
  metricsPort = await freePort();
  await cluster.kubectl(['apply', '-f', '-'], manifests(
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'up' }, spec: { baseURL: fake.url, credentials: { env: 'TEST_UPSTREAM_KEY' } } },
    { apiVersion: API, kind: 'Model', metadata: { name: 'gpt-priced' }, spec: { targets: [{ upstream: 'up', model: 'upstream-model' }], pricing: { inputPerMillion: String(INPUT_PRICE), outputPerMillion: String(OUTPUT_PRICE) } } },
    { apiVersion: API, kind: 'Plan', metadata: { name: 'metered' }, spec: { models: ['gpt-priced'], limits: { spendPerMonth: '5.00' } } },
    { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { displayName: 'Acme', plan: 'metered', members: [{ email: 'dana@example.com', role: 'owner' }] } },
    { apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-ci', annotations: { 'tollgate.dev/display-name': 'ci' } }, spec: { account: 'acme', keyHash: hashKey(key), limits: { spendPerMonth: '1.00' } } },
    { apiVersion: API, kind: 'ApiKey', metadata: { name: 'acme-idle', annotations: { 'tollgate.dev/display-name': 'idle' } }, spec: { account: 'acme', keyHash: hashKey(generateKey('tg')) } },
    // The gateway Service's one ready endpoint: the API process's metrics port (the operator and the console read it).
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'tollgate-gw', labels: { 'kubernetes.io/service-name': 'tollgate' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'metrics', port: metricsPort, protocol: 'TCP' }],
    },
  ));
  const defaults = loadConfig({});
  const kubernetes = { namespace: cluster.namespace, serviceName: null, kubeconfig: cluster.kubeconfig, relistIntervalMs: 10 * 60_000, debounceMs: 20, followSecrets: false };
  // The chart's gateway pods: the API, no console.
  api = await startGatewayProcess(cluster, { TOLLGATE_CONSOLE: 'off', TOLLGATE_CURRENCY: CURRENCY, TOLLGATE_METRICS_PORT: String(metricsPort), TOLLGATE_METRICS_HOST: '127.0.0.1' });
  const operatorConfig = loadOperatorConfig({ TOLLGATE_NAMESPACE: cluster.namespace, TOLLGATE_OPERATOR_PORT: '0', HOST: '127.0.0.1', TOLLGATE_USAGE_INTERVAL_MS: '300', TOLLGATE_LEASE_DURATION_MS: '3000' });
  operator = await startOperator({ ...operatorConfig, kubeconfig: cluster.kubeconfig }, pino({ level: 'silent' }));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp(`${base}/console/auth/callback`, { dana: { email: 'dana@example.com' } });
  // The chart's console pod: the console, with the gateway Service to read usage from.
  consoleServer = await startTestGateway([], {
    port,
    publicURL: base,
    limits: { ...defaults.limits, currency: CURRENCY },
    source: 'kubernetes',
    kubernetes,
    console: { ...defaults.console, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, gatewayUsage: { service: 'tollgate', metricsPort } },
  });
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200 && (await fetch(`${api.url}/readyz`)).status === 200, 20_000, 'both to list the namespace');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await consoleServer?.stop();
  await api?.stop();
  await operator?.stop();
  await idp?.close();
  await fake?.close();
  await cluster?.close();
});

const keyRow = (page: Page, label: string) => page.getByRole('row').filter({ has: page.getByRole('cell', { name: new RegExp(`^${label}\\b`) }) });
const cells = async (page: Page, label: string) => (await keyRow(page, label).locator('td').allTextContents()).map((t) => t.trim());

describe('the console in its own process reads usage from the gateway processes', () => {
  let page: Page;
  let usedFrom: number;
  let usedTo: number;
  let expected = 0;

  it('signs in; before any request no key shows a last use', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${base}/console/auth/login`);
    await page.locator('input[name=login]').fill('dana');
    await page.locator('input[name=password]').fill('any');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]').click();
    await page.waitForURL(`${base}/console/`);
    await page.goto(`${base}/console/accounts/acme`);
    // Name, created, expires, status, last used, spend, revoke.
    expect((await cells(page, 'ci'))[4]).toBe('—');
  });

  it('a key used at the API process shows its last use at the console; an unused key shows none', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${api.url}/v1`, maxRetries: 0 });
    await waitFor(async () => (await fetch(`${api.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200, 10_000, 'the key at the gateway');
    usedFrom = Math.floor(Date.now() / 1000) * 1000;
    for (const text of ['one', 'two']) {
      const answer = await client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: text }] });
      // What the upstream reported, at the Model's prices, in micros.
      expected += answer.usage!.prompt_tokens * INPUT_PRICE + answer.usage!.completion_tokens * OUTPUT_PRICE;
    }
    usedTo = Date.now();
    await page.goto(`${base}/console/accounts/acme`);
    const lastUsed = Date.parse(`${(await cells(page, 'ci'))[4].replace(' ', 'T')}`);
    expect(lastUsed).toBeGreaterThanOrEqual(usedFrom);
    expect(lastUsed).toBeLessThanOrEqual(usedTo);
    expect((await cells(page, 'idle'))[4]).toBe('—');
  });

  it('spend on the page, per key and in the spend chart is exactly GET /usage\'s, in the currency, as the SPEND column shows it', async () => {
    const usage = (await (await fetch(`http://127.0.0.1:${metricsPort}/usage`)).json()) as any;
    expect(usage.currency).toBe(CURRENCY);
    // 0.0086: two requests under a cent each, which a float rounded to cents would show as 0.01.
    expect(usage.accounts.acme.spend).toBe(formatMoney(expected));
    expect(usage.keys['acme-ci'].spend).toBe(formatMoney(expected));
    // The operator rolls it into Account.status.usage; the console reads the month's spend from there.
    await waitFor(async () => (await cluster.get('accounts', 'acme'))?.status?.usage?.spend === `${usage.accounts.acme.spend} ${CURRENCY}`, 20_000, 'the operator to roll the spend up');
    expect(await cluster.kubectl(['get', 'account', 'acme'])).toMatch(new RegExp(`SPEND[\\s\\S]*${usage.accounts.acme.spend.replace('.', '\\.')} ${CURRENCY}`));

    await page.goto(`${base}/console/accounts/acme`);
    expect((await page.locator('dd.spend').textContent())!.trim()).toBe(`${usage.accounts.acme.spend} ${CURRENCY} of 5.00 ${CURRENCY} (0%)`);
    expect((await cells(page, 'ci'))[5]).toBe(`${usage.keys['acme-ci'].spend} ${CURRENCY} of 1.00 ${CURRENCY} (0%)`);
    expect((await cells(page, 'idle'))[5]).toBe('—');

    const chart = page.locator('figure.chart').filter({ hasText: `Spend per day (${CURRENCY})` });
    const today = new Date().toISOString().slice(0, 10);
    const rows = (await chart.locator('tbody tr').allTextContents()).map((row) => row.trim());
    expect(rows).toEqual([`${today}gpt-priced${usage.models['gpt-priced'].spend}`]);
    const bar = await chart.locator('svg rect title').first().textContent();
    expect(bar).toBe(`${today} gpt-priced: ${usage.models['gpt-priced'].spend}`);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/console-account.png`, fullPage: true });
  });
});
