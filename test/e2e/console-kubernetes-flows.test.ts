// The account area's other flows in Kubernetes mode, against the fake API server with the real
// kubectl: registration (signup open) creates an Account through the API with the user as its owner;
// a payment (checkout.session.completed) and a cancelled subscription (customer.subscription.deleted)
// patch it, the second back to the free tier; a bad signature or a stale timestamp is refused with its
// reason and nothing changes (the Account's resourceVersion stays the same).
import type { Browser, Page } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { launchChromium } from '../helpers/browser.ts';
import { API, manifests, startCluster, type Cluster } from '../helpers/cluster.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

const WEBHOOK_SECRET = 'whsec_test_console_kube_flows_0123';
const stripe = new Stripe('sk_test_unused');

let cluster: Cluster;
let idp: TestIdp;
let gateway: TestGateway;
let browser: Browser;
let base: string;

beforeAll(async () => {
  cluster = await startCluster('tollgate-console-flows');
  await cluster.kubectl(['apply', '-f', '-'], manifests(
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'paid' }, spec: { baseURL: 'http://127.0.0.1:9/v1' } },
    { apiVersion: API, kind: 'Model', metadata: { name: 'gpt-pro' }, spec: { targets: [{ upstream: 'paid' }] } },
    { apiVersion: API, kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['gpt-pro'], billing: { paymentLink: 'https://buy.stripe.com/test_pro' } } },
  ));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp(`${base}/console/auth/callback`, { erin: { email: 'erin@example.com', name: 'Erin' } });
  gateway = await startTestGateway([], {
    port,
    publicURL: base,
    source: 'kubernetes',
    kubernetes: { namespace: cluster.namespace, serviceName: null, kubeconfig: cluster.kubeconfig, relistIntervalMs: 10 * 60_000, debounceMs: 20, followSecrets: false },
    console: { ...loadConfig({}).console, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, signupOpen: true, stripeWebhookSecret: WEBHOOK_SECRET },
  });
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 20_000, 'the gateway to list the namespace');
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await idp?.close();
  await cluster?.close();
});

function signed(event: object, options: { secret?: string; timestamp?: number } = {}) {
  const payload = JSON.stringify(event);
  return { payload, header: stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? WEBHOOK_SECRET, ...(options.timestamp ? { timestamp: options.timestamp } : {}) }) };
}

async function post(body: { payload: string; header: string }) {
  const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': body.header }, body: body.payload });
  return { status: response.status, json: (await response.json()) as any };
}

describe('registration and payment in Kubernetes mode', () => {
  let page: Page;
  let account: string;

  /** The console's page of the account shows `text` (its snapshot has the informer's event). */
  const pageShows = (text: string) =>
    waitFor(async () => {
      await page.goto(`${base}/console/accounts/${account}`);
      return (await page.locator('#plan-h + p').textContent())?.includes(text) ?? false;
    }, 10_000, `the account page to show ${text}`);

  it('with signup open, a newcomer\'s "Create my account" creates an Account through the API, with them as owner', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${base}/console/auth/login`);
    await page.locator('input[name=login]').fill('erin');
    await page.locator('input[name=password]').fill('any');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]').click();
    await page.waitForURL(`${base}/console/`);
    await page.getByRole('button', { name: 'Create my account' }).click();
    await page.waitForURL(/\/console\/accounts\/erin-[a-z0-9]{4}$/);
    account = new URL(page.url()).pathname.split('/').pop()!;

    const written = await cluster.get('accounts', account);
    expect(written.spec).toEqual({ displayName: 'Erin', members: [{ email: 'erin@example.com', role: 'owner' }] });
    expect(written.metadata.annotations).toMatchObject({ 'tollgate.dev/created-by': 'erin@example.com' });
    expect(await cluster.kubectl(['get', 'accounts'])).toContain(account);
    expect(await page.locator('#plan-h + p').textContent()).toBe('Plan: free tier');
    // A second registration by the same user is refused: they already belong to an account.
    const again = await page.request.post(`${base}/console/register`, { form: { _csrf: await page.locator('input[name=_csrf]').first().inputValue() }, headers: { origin: base } });
    expect(again.status()).toBe(409);
  });

  it('a bad signature or a stale timestamp is refused with its reason, and the Account is not touched', async () => {
    const before = await cluster.get('accounts', account);
    const event = { id: 'evt_flow_bad', object: 'event', type: 'checkout.session.completed', data: { object: { id: 'cs_bad', object: 'checkout.session', client_reference_id: account, customer: 'cus_flow', metadata: { plan: 'pro' } } } };
    expect(await post(signed(event, { secret: 'whsec_someone_else' }))).toMatchObject({ status: 400, json: { error: { code: 'bad_signature', type: 'invalid_request_error' } } });
    expect(await post(signed(event, { timestamp: Math.floor(Date.now() / 1000) - 301 }))).toMatchObject({ status: 400, json: { error: { code: 'stale_timestamp' } } });
    const after = await cluster.get('accounts', account);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.spec.plan).toBeUndefined();
    expect(after.metadata.annotations?.['tollgate.dev/stripe-events']).toBeUndefined();
  });

  it('checkout.session.completed gives the plan; customer.subscription.deleted for that customer returns the Account to the free tier', async () => {
    const paid = { id: 'evt_flow_paid', object: 'event', type: 'checkout.session.completed', data: { object: { id: 'cs_flow', object: 'checkout.session', client_reference_id: account, customer: 'cus_flow', metadata: { plan: 'pro' } } } };
    expect(await post(signed(paid))).toMatchObject({ status: 200, json: { result: 'applied' } });
    expect((await cluster.get('accounts', account)).spec.plan).toBe('pro');
    await pageShows('Plan: pro');

    const cancelled = { id: 'evt_flow_cancel', object: 'event', type: 'customer.subscription.deleted', data: { object: { id: 'sub_flow', object: 'subscription', customer: 'cus_flow' } } };
    expect(await post(signed(cancelled))).toMatchObject({ status: 200, json: { result: 'applied' } });
    const back = await cluster.get('accounts', account);
    expect(back.spec.plan).toBeUndefined();
    expect(back.metadata.annotations).toMatchObject({ 'tollgate.dev/stripe-customer': 'cus_flow', 'tollgate.dev/stripe-events': 'evt_flow_paid,evt_flow_cancel' });
    expect(await cluster.kubectl(['get', 'account', account, '-o', 'jsonpath={.spec.plan}'])).toBe('');
    await pageShows('Plan: free tier');
    // The same cancellation again changes nothing.
    expect(await post(signed(cancelled))).toMatchObject({ status: 200, json: { result: 'duplicate' } });
    expect((await cluster.get('accounts', account)).metadata.resourceVersion).toBe(back.metadata.resourceVersion);
  });
});
