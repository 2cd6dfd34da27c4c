// The account area's accessibility in a real Chromium, against the real gateway and a real OpenID
// provider: the whole key flow with the keyboard alone (skip link, create by Enter, copy, revoke
// through its confirmation page: cancel, then confirm);
// on every page, named controls, text alternatives for the charts, headings in order, a lang and a
// visible focus with enough contrast; and the roles a screen reader announces for the key table and
// the forms, read from the browser's accessibility tree (locator.ariaSnapshot).
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { auditFocus, auditPage, focused, tabTo } from '../helpers/accessibility.ts';
import { launchChromium } from '../helpers/browser.ts';
import { API, apiKey, newKey, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

let idp: TestIdp;
let gateway: TestGateway;
let browser: Browser;
let base: string;
const contexts: BrowserContext[] = [];

// Ana owns Acme (a key, used once so the usage charts are drawn) and is a plain member of Globex;
// Newt belongs to no account (the registration page).
const acme = { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { displayName: 'Acme', members: [{ email: 'ana@example.com', role: 'owner' }] } };
const globex = { apiVersion: API, kind: 'Account', metadata: { name: 'globex' }, spec: { displayName: 'Globex', members: [{ email: 'ana@example.com', role: 'member' }] } };
const ciKey = newKey('acme-ci', 'acme');
const ciManifest = { ...apiKey(ciKey), metadata: { name: 'acme-ci', annotations: { 'tollgate.dev/display-name': 'ci' } } };

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  context.setDefaultTimeout(10_000);
  contexts.push(context);
  return context.newPage();
}

async function signIn(user: string): Promise<Page> {
  const page = await newPage();
  await page.goto(`${base}/console/`);
  await page.getByRole('link', { name: 'Sign in' }).click();
  // oidc-provider's own development pages (not ours to audit): a login form, then consent.
  await page.locator('input[name=login]').fill(user);
  await page.locator('input[name=password]').fill('any');
  await page.locator('button[type=submit]').click();
  await page.locator('button[type=submit]').click();
  await page.waitForURL(`${base}/console/**`);
  return page;
}

const h1 = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor();

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startTestIdp(`${base}/console/auth/callback`, { ana: { email: 'ana@example.com', name: 'Ana' }, newt: { email: 'newt@example.com', name: 'Newt' } });
  gateway = await startTestGateway([acme, globex, ciManifest], {
    port,
    publicURL: base,
    console: { ...loadConfig({}).console, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }, signupOpen: true },
  });
  await gateway.client(ciKey.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hello' }] });
  browser = await launchChromium();
});

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await gateway?.stop();
  await idp?.close();
});

describe('the account area with the keyboard alone', () => {
  it('skips to the content, creates a key by Enter, copies it, cancels its revocation and then confirms it, never touching the mouse', async () => {
    const page = await signIn('ana');
    await page.goto(`${base}/console/accounts/acme`);
    await h1(page, 'Acme');

    // The first Tab stop is the skip link, on screen while it has focus; Enter lands in <main>.
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('link "Skip to content"');
    const skipBox = await page.locator(':focus').boundingBox();
    expect(skipBox!.x).toBeGreaterThanOrEqual(0);
    expect(skipBox!.y).toBeGreaterThanOrEqual(0);
    await page.keyboard.press('Enter');
    expect(new URL(page.url()).hash).toBe('#main');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.querySelector('main')!.contains(document.activeElement))).toBe(true);

    // The key name field by Tab, announced by its label; Enter in it submits the form.
    await tabTo(page, /^textbox "Key name"/);
    await page.keyboard.type('laptop');
    await page.keyboard.press('Enter');
    await h1(page, 'New API key');
    const key = await page.getByLabel(/Your new API key/).inputValue();
    expect(key).toMatch(/^tg_sk_/);

    // The copy button, and back to the key field with Shift+Tab (the order is the reading order).
    await tabTo(page, /^button "Copy"$/);
    await tabTo(page, /^textbox "Your new API key/, { back: true, max: 1 });
    await tabTo(page, /^button "Copy"$/, { max: 1 });
    await page.keyboard.press('Space');
    await waitFor(async () => (await page.getByRole('status').filter({ hasText: 'Copied' }).count()) === 1, 5000, 'the copy button to announce the copy');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);

    // Back to the account by its link; the key's own "Revoke key laptop" leads to the confirmation,
    // whose Cancel is reached by Tab and returns to the account with the key still working.
    await tabTo(page, /^link "Back to the account"/);
    await page.keyboard.press('Enter');
    await h1(page, 'Acme');
    await tabTo(page, /^link "Revoke key laptop"$/);
    await page.keyboard.press('Enter');
    await h1(page, 'Revoke key laptop?');
    await tabTo(page, /^link "Cancel"$/);
    await page.keyboard.press('Enter');
    await h1(page, 'Acme');
    await expect(page.getByRole('row', { name: /^laptop/ }).getByRole('cell', { name: 'active' }).count()).resolves.toBe(1);
    expect((await gateway.client(key).models.list()).data.map((m) => m.id)).toEqual(['service-test']);

    // Again, and this time the confirm button, reached by Tab and pressed with Enter.
    await tabTo(page, /^link "Revoke key laptop"$/);
    await page.keyboard.press('Enter');
    await h1(page, 'Revoke key laptop?');
    await tabTo(page, /^button "Revoke key laptop"$/);
    await page.keyboard.press('Enter');
    await h1(page, 'Acme');
    await waitFor(async () => (await page.getByRole('row', { name: /^laptop/ }).getByRole('cell', { name: 'revoked' }).count()) === 1, 10_000, 'the key to show as revoked');
    const refused = await gateway.client(key).models.list().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('every page of the account area', () => {
  /** Each page: its defects by the DOM rules, then by Tab-walking it for focus, both empty. */
  async function expectAccessible(page: Page, what: string) {
    expect({ what, problems: await auditPage(page) }).toEqual({ what, problems: [] });
    expect({ what, problems: await auditFocus(page) }).toEqual({ what, problems: [] });
  }

  it('names every control, describes every chart, orders its headings and shows where focus is', async () => {
    const anonymous = await newPage();
    await anonymous.goto(`${base}/console/`);
    await h1(anonymous, 'Sign in');
    await expectAccessible(anonymous, 'sign-in');

    const newt = await signIn('newt');
    await h1(newt, 'Your accounts');
    await expect(newt.getByRole('button', { name: 'Create my account' }).count()).resolves.toBe(1);
    await expectAccessible(newt, 'registration');

    const ana = await signIn('ana');
    await h1(ana, 'Your accounts');
    await expectAccessible(ana, 'accounts list');

    await ana.goto(`${base}/console/accounts/acme`);
    await h1(ana, 'Acme');
    // The charts are there to be checked: one image per measure, each with its table.
    await expect(ana.getByRole('img', { name: /Requests per day/ }).count()).resolves.toBe(1);
    await expectAccessible(ana, 'account (owner)');

    await ana.goto(`${base}/console/accounts/globex`);
    await h1(ana, 'Globex');
    await expectAccessible(ana, 'account (member)');

    // The revocation's confirmation (left unconfirmed: the key stays for the tests below).
    await ana.goto(`${base}/console/accounts/acme`);
    await ana.getByRole('link', { name: 'Revoke key ci' }).click();
    await h1(ana, 'Revoke key ci?');
    await expectAccessible(ana, 'revoke confirmation');

    await ana.goto(`${base}/console/accounts/acme`);
    await ana.getByLabel('Key name').fill('audit');
    await ana.getByRole('button', { name: 'Create key' }).click();
    await h1(ana, 'New API key');
    await expectAccessible(ana, 'new key');

    expect((await ana.goto(`${base}/console/accounts/nobody`))?.status()).toBe(404);
    await expectAccessible(ana, 'not found');
  });
});

describe('what a screen reader announces', () => {
  it('the keys as a named table with column headers, the create form as a named form with labelled fields', async () => {
    const ana = await signIn('ana');
    await ana.goto(`${base}/console/accounts/acme`);
    await h1(ana, 'Acme');
    const landmarks = await ana.locator('body').ariaSnapshot();
    expect(landmarks).toMatch(/^- banner:/m);
    expect(landmarks).toMatch(/^- main:/m);

    const table = await ana.getByRole('table', { name: 'API keys' }).ariaSnapshot();
    for (const column of ['Name', 'Created', 'Expires', 'Status', 'Last used', 'Spend this month', 'Actions']) expect(table).toContain(`columnheader "${column}"`);
    // A key's row: its cells, and a revoke button that says which key it revokes.
    expect(table).toMatch(/- row "ci acme-ci .*active/);
    expect(table).toMatch(/- cell "ci acme-ci"/);
    expect(table).toContain('link "Revoke key ci"');

    // The confirmation announces the key, that it cannot be undone, and its two ways out by name.
    await ana.getByRole('link', { name: 'Revoke key ci' }).click();
    await h1(ana, 'Revoke key ci?');
    const confirmation = await ana.getByRole('main').ariaSnapshot();
    expect(confirmation).toMatch(/- term: Key name\n\s*- definition: ci \(acme-ci\)/);
    expect(confirmation).toContain('This cannot be undone.');
    expect(confirmation).toContain('button "Revoke key ci"');
    expect(confirmation).toContain('link "Cancel"');
    await ana.getByRole('link', { name: 'Cancel' }).click();
    await h1(ana, 'Acme');

    const form = await ana.getByRole('form', { name: 'Create a key' }).ariaSnapshot();
    expect(form).toMatch(/textbox "Key name"/);
    expect(form).toMatch(/"Expires on \(optional\)"/);
    expect(form).toContain('button "Create key"');

    // The usage charts: images named by what they show, each with a table of the same figures.
    const usage = await ana.getByRole('region', { name: /Usage in/ }).ariaSnapshot();
    expect(usage).toMatch(/img "Requests per day, \d{4}-\d{2}"/);
    expect(usage).toMatch(/img "Tokens per day/);
    expect(usage).toMatch(/list "Models"/);
    // Its data table opens from the keyboard, named, with the figures of the request made above.
    const summary = ana.getByText('Requests per day as a table', { exact: true });
    await summary.focus();
    await summary.press('Enter');
    const data = await ana.getByRole('table', { name: /^Requests per day/ }).ariaSnapshot();
    for (const column of ['Day', 'Model', 'Value']) expect(data).toContain(`columnheader "${column}"`);
    expect(data).toMatch(/- row "\d{4}-\d{2}-\d{2} service-test 1"/);

    await ana.getByLabel('Key name').fill('reader');
    await ana.getByLabel('Key name').press('Enter');
    await h1(ana, 'New API key');
    const secret = await ana.getByRole('main').ariaSnapshot();
    expect(secret).toMatch(/- status: "Key \\"reader\\" was created/);
    expect(secret).toMatch(/textbox "Your new API key \(acme-[a-z0-9]+\)"/);
    expect(secret).toContain('button "Copy"');
  });
});
