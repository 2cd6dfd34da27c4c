// The account area in Kubernetes mode: the gateway on its Kubernetes source against the fake API
// server, its console writing through the API (as the chart's console ServiceAccount would), and the
// real kubectl showing what it wrote. A real Chromium signs in at a real oidc-provider, creates a key,
// the openai SDK uses it, a Stripe-signed webhook upgrades the account, and revoking (confirmed on its
// own page; cancelled first, which keeps the ApiKey) deletes the key.
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { launchChromium } from '../helpers/browser.ts';
import { API, manifests, startCluster, type Cluster } from '../helpers/cluster.ts';
import { raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

const WEBHOOK_SECRET = 'whsec_test_console_kube_0123456789';
const stripe = new Stripe('sk_test_unused');

let cluster: Cluster;
let idp: TestIdp;
let gateway: TestGateway;
let browser: Browser;
let base: string;

beforeAll(async () => {
  cluster = await startCluster('tollgate-console');
  await cluster.kubectl(['apply', '-f', '-'], manifests(
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'paid' }, spec: { baseURL: 'http://127.0.0.1:9/v1' } },
    { apiVersion: API, kind: 'Model', metadata: { name: 'gpt-pro' }, spec: { targets: [{ upstream: 'paid' }] } },
    { apiVersion: API, kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['gpt-pro'], billing: { paymentLink: 'https://buy.stripe.com/test_pro' } } },
    { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { displayName: 'Acme', members: [{ email: 'dana@example.com', role: 'owner' }] } },
  ));
  const port = await freePort();
  const metricsPort = await freePort();
  // The gateway Service's endpoints, whose metrics ports the console sums for the per-day chart: this
  // test's gateway, listed twice, stands for two replicas (so a sum is told apart from one answer).
  await cluster.kubectl(['apply', '-f', '-'], manifests({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'tollgate-abc12', labels: { 'kubernetes.io/service-name': 'tollgate' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }, { addresses: ['127.0.0.1'], conditions: { ready: true } }, { addresses: ['127.0.0.9'], conditions: { ready: false } }],
    ports: [{ name: 'metrics', port: metricsPort, protocol: 'TCP' }],
  }));
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp(`${base}/console/auth/callback`, { dana: { email: 'dana@example.com' } });
  gateway = await startTestGateway([], {
    port,
    publicURL: base,
    telemetry: { ...loadConfig({}).telemetry, metricsPort, metricsHost: '127.0.0.1' },
    source: 'kubernetes',
    // As the chart's console pods run: no Secrets followed (their Role may not read them).
    kubernetes: { namespace: cluster.namespace, serviceName: null, kubeconfig: cluster.kubeconfig, relistIntervalMs: 10 * 60_000, debounceMs: 20, followSecrets: false },
    console: { ...loadConfig({}).console, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, stripeWebhookSecret: WEBHOOK_SECRET, gatewayUsage: { service: 'tollgate', metricsPort } },
  });
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 20_000, 'the gateway to list the namespace');
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await idp?.close();
  await cluster?.close();
});

async function modelsOf(key: string): Promise<string[] | number> {
  const response = await raw(gateway, 'GET', '/v1/models', { key });
  return response.status === 200 ? response.json.data.map((m: { id: string }) => m.id) : response.status;
}

describe('the account area on the Kubernetes source', () => {
  let page: Page;
  let key: string;
  let keyName: string;

  it('a key created in the browser is an ApiKey in the API server (kubectl shows it), holding only its hash', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${base}/console/auth/login`);
    await page.locator('input[name=login]').fill('dana');
    await page.locator('input[name=password]').fill('any');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]').click();
    await page.waitForURL(`${base}/console/`);
    await page.getByRole('link', { name: 'Acme' }).click();
    await page.getByLabel('Key name').fill('ci');
    await page.getByLabel('Expires on (optional)').fill('2099-12-31');
    await page.getByRole('button', { name: 'Create key' }).click();
    key = await page.getByLabel(/Your new API key/).inputValue();
    keyName = (await page.getByText(/^Your new API key \(/).textContent())!.match(/\((acme-[a-z0-9]{5})\)/)![1];

    const written = await cluster.get('apikeys', keyName);
    expect(written.spec).toEqual({ account: 'acme', keyHash: `sha256:${createHash('sha256').update(key).digest('hex')}`, expiresAt: '2099-12-31T23:59:59Z' });
    expect(written.metadata.annotations).toMatchObject({ 'tollgate.dev/display-name': 'ci', 'tollgate.dev/created-by': 'dana@example.com' });
    expect(await cluster.kubectl(['get', 'apikeys'])).toContain(keyName);
    expect(JSON.stringify(written)).not.toContain(key);

    await waitFor(async () => Array.isArray(await modelsOf(key)), 10_000, 'the gateway to see the new key');
    const answer = await gateway.client(key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0].message.content).toBeTruthy();
  });

  it('the per-day chart sums GET /usage/days of every ready gateway endpoint', async () => {
    await page.goto(`${base}/console/accounts/acme`);
    const rows = await page.locator('figure.chart').first().locator('tbody tr').allTextContents();
    // One chat request at the one process, counted once per listed ready endpoint (two); the
    // endpoint that is not ready is not asked.
    expect(rows.find((row) => row.includes('service-test'))).toMatch(/service-test2$/);
  });

  it('a Stripe-signed payment patches the Account through the API: the same key gets the plan\'s models, once', async () => {
    const event = { id: 'evt_kube_1', object: 'event', type: 'checkout.session.completed', data: { object: { id: 'cs_1', object: 'checkout.session', client_reference_id: 'acme', customer: 'cus_k1', metadata: { plan: 'pro' } } } };
    const post = async () => {
      const payload = JSON.stringify(event);
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
      const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload });
      return (await response.json()) as { result?: string };
    };
    expect((await post()).result).toBe('applied');
    const account = await cluster.get('accounts', 'acme');
    expect(account.spec.plan).toBe('pro');
    expect(account.metadata.annotations).toMatchObject({ 'tollgate.dev/stripe-customer': 'cus_k1', 'tollgate.dev/stripe-events': 'evt_kube_1' });
    await waitFor(async () => JSON.stringify(await modelsOf(key)) === JSON.stringify(['service-test', 'gpt-pro']), 10_000, 'the plan\'s models for the same key');

    expect((await post()).result).toBe('duplicate');
    expect((await cluster.get('accounts', 'acme')).metadata.resourceVersion).toBe(account.metadata.resourceVersion);
  });

  it('the month\'s totals are the operator\'s cluster-wide roll-up (Account.status.usage), read fresh', async () => {
    const month = new Date().toISOString().slice(0, 7);
    // The spend as the operator writes it (the Account's SPEND column): the page shows that, not its own sum.
    cluster.kube.mergePatch(API, 'Account', cluster.namespace, 'acme', { status: { usage: { month, requests: 4321, inputTokens: 100_000, outputTokens: 23_456, spend: '12.345001 USD' } } }, 'status');
    await page.goto(`${base}/console/accounts/acme`);
    const limits = page.locator('dl.limits');
    await expect(limits.textContent()).resolves.toMatch(/Requests this month\s*4,321[\s\S]*Tokens this month\s*123,456/);
    await expect(page.locator('dd.spend').textContent()).resolves.toBe('12.345001 USD (no spend budget)');
  });

  it('revoking in the browser is confirmed first: Cancel keeps the ApiKey; confirmed, it is deleted and the key refused with 401', async () => {
    await page.goto(`${base}/console/accounts/acme`);
    await page.getByRole('link', { name: 'Revoke key ci' }).click();
    await page.getByRole('heading', { level: 1, name: 'Revoke key ci?' }).waitFor();
    const facts = (await page.locator('dl.limits').innerText()).replace(/\s+/g, ' ');
    expect(facts).toContain(`Key name ci (${keyName})`);
    // Its last use as the gateway replicas report it (GET /usage/days), as on the account page.
    expect(facts).toMatch(/Last used \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z/);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(`${base}/console/accounts/acme`);
    expect(await cluster.get('apikeys', keyName)).not.toBeNull();
    expect((await gateway.client(key).models.list()).data.map((m) => m.id)).toEqual(['service-test', 'gpt-pro']);

    await page.getByRole('link', { name: 'Revoke key ci' }).click();
    await page.getByRole('button', { name: 'Revoke key ci' }).click();
    await page.waitForURL(`${base}/console/accounts/acme`);
    expect(await cluster.get('apikeys', keyName)).toBeNull();
    await waitFor(async () => (await modelsOf(key)) === 401, 10_000, 'the revoked key to be refused');
    const error = await gateway.client(key).models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(await page.getByText('No keys yet.').count()).toBe(1);
    expect(gateway.logText()).not.toContain(key);
  });
});
