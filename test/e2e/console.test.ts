// The account area in a real Chromium against the real gateway (standalone: the manifest file) and a
// real OpenID provider: sign in, register, create a key and read it once, use it with the official
// SDK, pay through a webhook signed by the `stripe` package and see the plan's models for the same
// key, revoke it (through a confirmation page: cancelled, the key still works; confirmed, 401); a second user who cannot see the first user's account; CSRF and
// signature failures refused, nothing changed. One browser for the file; a context per user.
import { readFile } from 'node:fs/promises';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { launchChromium } from '../helpers/browser.ts';
import { API, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

const WEBHOOK_SECRET = 'whsec_test_console_0123456789abcdef';
const stripe = new Stripe('sk_test_unused');
const SHOTS = process.env.TOLLGATE_SCREENSHOTS; // a directory: the docs' screenshots are taken from this run

let idp: TestIdp;
let gateway: TestGateway;
let browser: Browser;
let base: string;
const contexts: BrowserContext[] = [];

const paidPlan = { ...plan('pro', ['gpt-pro'], { requestsPerMinute: 600, tokensPerMonth: 1_000_000 }), spec: { models: ['gpt-pro'], limits: { requestsPerMinute: 600, tokensPerMonth: 1_000_000 }, billing: { paymentLink: 'https://buy.stripe.com/test_pro' } } };
const bobsAccount = { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { displayName: 'Acme', members: [{ email: 'bob@example.com', role: 'owner' }] } };
// Bob is only a member here: he sees it, changes nothing.
const bobsTeam = { apiVersion: API, kind: 'Account', metadata: { name: 'globex' }, spec: { displayName: 'Globex', members: [{ email: 'BOB@example.com', role: 'member' }] } };
const globexKey = newKey('globex-ci', 'globex');

async function signIn(user: string): Promise<Page> {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  context.setDefaultTimeout(10_000);
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(`${base}/console/`);
  expect(new URL(page.url()).pathname).toBe('/console/signin');
  await shot(page, 'console-signin');
  await page.getByRole('link', { name: 'Sign in' }).click();
  // oidc-provider's own development pages: a login form, then consent.
  await page.locator('input[name=login]').fill(user);
  await page.locator('input[name=password]').fill('any');
  await page.locator('button[type=submit]').click();
  await page.locator('button[type=submit]').click();
  await page.waitForURL(`${base}/console/**`);
  return page;
}

async function shot(page: Page, name: string) {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

function signed(event: object, timestamp = Math.floor(Date.now() / 1000), secret = WEBHOOK_SECRET) {
  const payload = JSON.stringify(event);
  return { payload, header: stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }) };
}

async function postWebhook(body: { payload: string; header: string }) {
  const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': body.header }, body: body.payload });
  return { status: response.status, json: (await response.json()) as any };
}

const checkoutCompleted = (id: string, account: string, planName: string, customer = 'cus_test_1') => ({
  id,
  object: 'event',
  type: 'checkout.session.completed',
  data: { object: { id: `cs_${id}`, object: 'checkout.session', client_reference_id: account, customer, metadata: { plan: planName }, payment_status: 'paid' } },
});

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp(`${base}/console/auth/callback`, {
    carol: { email: 'carol@example.com', name: 'Carol' },
    bob: { email: 'bob@example.com', name: 'Bob' },
  });
  const defaults = loadConfig({}).console;
  gateway = await startTestGateway([upstream('paid', 'http://127.0.0.1:9/v1'), model('gpt-pro', [{ upstream: 'paid' }]), paidPlan, bobsAccount, bobsTeam, apiKey(globexKey)], {
    port,
    publicURL: base,
    console: { ...defaults, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, signupOpen: true, stripeWebhookSecret: WEBHOOK_SECRET },
  });
  browser = await launchChromium();
});

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await gateway?.stop();
  await idp?.close();
});

describe('the account area (standalone)', () => {
  let carol: Page;
  let account: string;
  let key: string;

  it('a newcomer signs in at the IdP, registers, creates a key, reads it once and uses it with the SDK', async () => {
    carol = await signIn('carol');
    await shot(carol, 'console-register');
    await carol.getByRole('button', { name: 'Create my account' }).click();
    await carol.waitForURL(/\/console\/accounts\/carol-[a-z0-9]{4}$/);
    account = decodeURIComponent(new URL(carol.url()).pathname.split('/').pop()!);
    await expect(carol.getByText('free tier')).toBeTruthy();

    await carol.getByLabel('Key name').fill('backend <prod>');
    await carol.getByRole('button', { name: 'Create key' }).click();
    key = await carol.getByLabel(/Your new API key/).inputValue();
    expect(key).toMatch(/^tg_sk_[A-Za-z0-9_-]{43}$/);
    await carol.getByRole('button', { name: 'Copy' }).click();
    await waitFor(async () => (await carol.evaluate(() => navigator.clipboard.readText())) === key, 5000, 'the copy button to put the key on the clipboard');
    await shot(carol, 'console-new-key');

    // Once: the account page lists the key by name, never its value; the file holds only its hash.
    await carol.goto(`${base}/console/accounts/${account}`);
    expect(await carol.content()).not.toContain(key);
    await expect(carol.getByRole('cell', { name: /^backend <prod>/ }).count()).resolves.toBe(1);
    const file = await readFile(gateway.configFile, 'utf8');
    expect(file).not.toContain(key);
    expect(file).toContain(`account: ${account}`);

    const client = gateway.client(key);
    const answer = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hello' }] });
    expect(answer.choices[0].message.content).toBeTruthy();
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['service-test']);
    // The request shows in this month's chart and as the key's last use.
    await carol.reload();
    await expect(carol.getByRole('img', { name: /Requests per day/ }).count()).resolves.toBe(1);
    await expect(carol.getByText('service-test', { exact: true }).first().isVisible()).resolves.toBe(true);
    // (The docs' console-account.png is a priced account's: test/e2e/console-usage.test.ts takes it.)
  });

  it('the upgrade opens the plan\'s payment link with the account as client_reference_id', async () => {
    const upgrade = carol.getByRole('link', { name: 'Upgrade to pro' });
    const href = await upgrade.getAttribute('href');
    const response = await carol.request.get(`${base}${href}`, { maxRedirects: 0 });
    expect(response.status()).toBe(302);
    const target = new URL(response.headers().location);
    expect(target.origin + target.pathname).toBe('https://buy.stripe.com/test_pro');
    expect(target.searchParams.get('client_reference_id')).toBe(account);
  });

  it('a webhook signed by the stripe package gives the same key the plan\'s models, once per event', async () => {
    const before = await readFile(gateway.configFile, 'utf8');
    // Refusals first: each with its reason, and the file untouched.
    const event = checkoutCompleted('evt_paid_1', account, 'pro');
    const bad = await postWebhook(signed(event, undefined, 'whsec_someone_else'));
    expect(bad).toMatchObject({ status: 400, json: { error: { code: 'bad_signature', type: 'invalid_request_error' } } });
    const stale = await postWebhook(signed(event, Math.floor(Date.now() / 1000) - 301));
    expect(stale).toMatchObject({ status: 400, json: { error: { code: 'stale_timestamp' } } });
    const unknownAccount = await postWebhook(signed(checkoutCompleted('evt_x1', 'nobody', 'pro')));
    expect(unknownAccount).toMatchObject({ status: 404, json: { error: { code: 'unknown_account' } } });
    const unknownPlan = await postWebhook(signed(checkoutCompleted('evt_x2', account, 'platinum')));
    expect(unknownPlan).toMatchObject({ status: 404, json: { error: { code: 'unknown_plan' } } });
    // Completed but not paid yet (a bank debit): nothing changes until the money arrives.
    const unpaid = checkoutCompleted('evt_unpaid_1', account, 'pro');
    unpaid.data.object.payment_status = 'unpaid';
    expect(await postWebhook(signed(unpaid))).toMatchObject({ status: 200, json: { result: 'awaiting_payment' } });
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);

    const paid = await postWebhook(signed(event));
    expect(paid).toMatchObject({ status: 200, json: { result: 'applied' } });
    const client = gateway.client(key);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['service-test', 'gpt-pro']);
    const afterPayment = await readFile(gateway.configFile, 'utf8');
    // The same event again, newly signed (as Stripe's retries are): nothing changes.
    expect(await postWebhook(signed(event))).toMatchObject({ status: 200, json: { result: 'duplicate' } });
    expect(await readFile(gateway.configFile, 'utf8')).toBe(afterPayment);

    await carol.reload();
    await expect(carol.getByText('gpt-pro', { exact: true }).first().isVisible()).resolves.toBe(true);

    // Cancelled: back to the free tier; the old payment event replayed still changes nothing.
    const cancelled = { id: 'evt_cancel_1', object: 'event', type: 'customer.subscription.deleted', data: { object: { id: 'sub_1', object: 'subscription', customer: 'cus_test_1' } } };
    expect(await postWebhook(signed(cancelled))).toMatchObject({ status: 200, json: { result: 'applied' } });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['service-test']);
    expect(await postWebhook(signed(event))).toMatchObject({ status: 200, json: { result: 'duplicate' } });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['service-test']);
  });

  it('a second user sees only their own account: the first user\'s is a 404, and so is revoking its key', async () => {
    const bob = await signIn('bob');
    await expect(bob.getByRole('link', { name: 'Acme' }).count()).resolves.toBe(1);
    expect(await bob.content()).not.toContain(account);
    await shot(bob, 'console-accounts');
    const response = await bob.goto(`${base}/console/accounts/${account}`);
    expect(response?.status()).toBe(404);
    await shot(bob, 'console-not-found');
    const missing = await bob.goto(`${base}/console/accounts/no-such-account`);
    expect(missing?.status()).toBe(404);
    // A real form post from bob's own page, aimed at carol's key: refused as unknown.
    await bob.goto(`${base}/console/accounts/acme`);
    const csrf = await bob.locator('input[name=_csrf]').first().inputValue();
    const keyName = (await readFile(gateway.configFile, 'utf8')).match(new RegExp(`name: (${account}-[a-z0-9]{5})`))![1];
    const revoke = await bob.request.post(`${base}/console/accounts/${account}/keys/${keyName}/revoke`, { form: { _csrf: csrf }, headers: { origin: base }, maxRedirects: 0 });
    expect(revoke.status()).toBe(404);
    // Its confirmation page too: the same 404, naming nothing of carol's.
    const confirm = await bob.goto(`${base}/console/accounts/${account}/keys/${keyName}/revoke`);
    expect(confirm?.status()).toBe(404);
    expect(await bob.content()).not.toContain('backend');
    expect((await gateway.client(key).models.list()).data.length).toBeGreaterThan(0);

    // A member sees the account read-only; the forms are not there, and a forged post is refused.
    await bob.goto(`${base}/console/accounts/globex`);
    await expect(bob.getByText('Only an owner of this account can create and revoke keys.').count()).resolves.toBe(1);
    await expect(bob.getByRole('button', { name: 'Create key' }).count()).resolves.toBe(0);
    await expect(bob.getByRole('cell', { name: /^globex-ci/ }).count()).resolves.toBe(1);
    await expect(bob.getByRole('link', { name: /Revoke/ }).count()).resolves.toBe(0);
    // A member is refused the confirmation page as every owner-only action (403), and the revocation itself.
    expect((await bob.goto(`${base}/console/accounts/globex/keys/globex-ci/revoke`))?.status()).toBe(403);
    const memberRevoke = await bob.request.post(`${base}/console/accounts/globex/keys/globex-ci/revoke`, { form: { _csrf: csrf }, headers: { origin: base }, maxRedirects: 0 });
    expect(memberRevoke.status()).toBe(403);
    expect((await gateway.client(globexKey.key).models.list()).data.length).toBeGreaterThan(0);
    const before = await readFile(gateway.configFile, 'utf8');
    const create = await bob.request.post(`${base}/console/accounts/globex/keys`, { form: { _csrf: csrf, label: 'sneaky' }, headers: { origin: base } });
    expect(create.status()).toBe(403);
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);
  });

  it('a change without the session\'s CSRF token, or from another origin, is refused and changes nothing', async () => {
    const before = await readFile(gateway.configFile, 'utf8');
    const csrf = await carol.locator('input[name=_csrf]').first().inputValue();
    const url = `${base}/console/accounts/${account}/keys`;
    const foreign = await carol.request.post(url, { form: { _csrf: csrf, label: 'evil' }, headers: { origin: 'https://evil.example' } });
    expect(foreign.status()).toBe(403);
    const noToken = await carol.request.post(url, { form: { label: 'evil' }, headers: { origin: base } });
    expect(noToken.status()).toBe(403);
    const wrongToken = await carol.request.post(url, { form: { _csrf: `${csrf.slice(0, -2)}xx`, label: 'evil' }, headers: { origin: base } });
    expect(wrongToken.status()).toBe(403);
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);
  });

  it('revoking is confirmed first: the row leads to a page naming the key; Cancel keeps it working, the confirm button makes it a 401 at once', async () => {
    const accountUrl = `${base}/console/accounts/${account}`;
    const before = await readFile(gateway.configFile, 'utf8');
    await carol.goto(accountUrl);
    // The row's control only leads to the confirmation: nothing is revoked by it.
    await carol.getByRole('link', { name: 'Revoke key backend <prod>' }).click();
    await carol.getByRole('heading', { level: 1, name: 'Revoke key backend <prod>?' }).waitFor();
    expect(new URL(carol.url()).pathname).toMatch(new RegExp(`^/console/accounts/${account}/keys/${account}-[a-z0-9]{5}/revoke$`));
    const facts = (await carol.locator('dl.limits').innerText()).replace(/\s+/g, ' ');
    expect(facts).toMatch(new RegExp(`Key name backend <prod> \\(${account}-[a-z0-9]{5}\\)`));
    expect(facts).toMatch(/Created \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z/);
    // The SDK calls of the first tests are its last use, as every gateway replica saw it.
    expect(facts).toMatch(/Last used \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z/);
    expect(facts).toContain('Status active');
    await expect(carol.getByText('This cannot be undone.').count()).resolves.toBe(1);
    await expect(carol.getByText(/Every application using this key stops working within about a second/).count()).resolves.toBe(1);
    await shot(carol, 'console-revoke-confirm');
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);

    // Cancel: back to the account, the key active and still answering through the SDK.
    await carol.getByRole('link', { name: 'Cancel' }).click();
    await carol.waitForURL(accountUrl);
    await expect(carol.getByRole('row', { name: /^backend <prod>/ }).getByRole('cell', { name: 'active' }).count()).resolves.toBe(1);
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);
    expect((await gateway.client(key).models.list()).data.map((m) => m.id)).toEqual(['service-test']);

    // The confirmation's form is a change like any other: without the session's token it is refused.
    const action = await carol.getByRole('link', { name: 'Revoke key backend <prod>' }).getAttribute('href');
    const forged = await carol.request.post(`${base}${action}`, { form: { _csrf: 'not-the-token' }, headers: { origin: base }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect(await readFile(gateway.configFile, 'utf8')).toBe(before);

    // Confirmed: revoked, shown as such, and refused at once.
    await carol.getByRole('link', { name: 'Revoke key backend <prod>' }).click();
    await carol.getByRole('button', { name: 'Revoke key backend <prod>' }).click();
    await carol.waitForURL(accountUrl);
    await expect(carol.getByRole('row', { name: /^backend <prod>/ }).getByRole('cell', { name: 'revoked' }).count()).resolves.toBe(1);
    await expect(carol.getByRole('link', { name: 'Revoke key backend <prod>' }).count()).resolves.toBe(0);
    const error = await gateway.client(key).models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    // Its confirmation page, opened again (an old tab, a bookmark): it says so and offers nothing to press.
    await carol.goto(`${base}${action}`);
    await expect(carol.getByRole('status').filter({ hasText: 'This key is already revoked.' }).count()).resolves.toBe(1);
    await expect(carol.getByRole('button', { name: /Revoke key/ }).count()).resolves.toBe(0);
  });

  it('pages carry a strict CSP and HttpOnly SameSite cookies; no key, code, token or cookie reaches the log', async () => {
    const response = await carol.request.get(`${base}/console/accounts/${account}`);
    expect(response.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(response.headers()['content-security-policy']).not.toContain('unsafe-inline');
    const cookie = (await carol.context().cookies(base)).find((c) => c.name === 'tollgate_session')!;
    expect(cookie).toMatchObject({ name: 'tollgate_session', httpOnly: true, sameSite: 'Lax', secure: false });

    const text = gateway.logText();
    expect(text).not.toContain(key);
    expect(text).not.toContain(cookie.value);
    expect(text).not.toMatch(/code=|state=|token=/);
    expect(text).not.toContain(idp.clientSecret);
    const audit = gateway.logs.filter((line) => line.audit === true).map((line) => `${line.action} ${line.object}`);
    expect(audit).toEqual(expect.arrayContaining([`account.create Account/${account}`, expect.stringMatching(/^apikey\.create ApiKey\//), expect.stringMatching(/^apikey\.revoke ApiKey\//), `account.plan Account/${account}`]));
    const callback = gateway.logs.find((line) => line.route === '/console/auth/callback');
    expect(callback).toBeDefined();
  });
});
