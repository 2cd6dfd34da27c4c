// The embedded default's one-time sign-in link (what `npm start` prints beside the demo key), the
// sign-in rate limit, and the console switched off — over raw HTTP, no browser needed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { account, expectErrorShape, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gateway: TestGateway;

beforeAll(async () => {
  // As `npm start` runs: the file not named by TOLLGATE_CONFIG, a demo key bootstrapped into it.
  gateway = await startTestGateway([account('other')], { configFileExplicit: false, bootstrapDemoKey: true, console: { ...loadConfig({}).console, signInPerMinute: 4 } });
});
afterAll(() => gateway?.stop());

const get = (path: string, cookie?: string, headers: Record<string, string> = {}, target: { url: string } = gateway) =>
  fetch(`${target.url}${path}`, { redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...headers } });

describe('the one-time sign-in link of the embedded default', () => {
  let link: URL;
  let cookie: string;

  it('signs in to the demo account once, and only to it', async () => {
    expect(gateway.consoleLink).toMatch(/\/console\/auth\/link\?token=[A-Za-z0-9_-]{43}$/);
    link = new URL(gateway.consoleLink!);
    const response = await get(link.pathname + link.search);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/console/accounts/demo');
    const setCookie = response.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^tollgate_session=[^;]+; path=\/; expires=[^;]+; samesite=lax; httponly$/);
    cookie = setCookie.split(';')[0];

    const page = await get('/console/accounts/demo', cookie);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(await page.text()).toContain('<h1>demo</h1>');
    // The link grants the demo account alone.
    expect((await get('/console/accounts/other', cookie)).status).toBe(404);
    // A forged or altered cookie is no session.
    expect((await get('/console/accounts/demo', `${cookie.slice(0, -4)}AAAA`)).headers.get('location')).toBe('/console/signin');
  });

  it('is refused the second time', async () => {
    const again = await get(link.pathname + link.search);
    expect(again.status).toBe(400);
    expect(again.headers.get('set-cookie')).toBeNull();
    expect(await again.text()).toContain('already used or has expired');
  });

  it('counts sign-in attempts per address: past the minute\'s allowance, 429 with Retry-After', async () => {
    // Two attempts so far; the allowance is four.
    expect((await get('/console/auth/link?token=guess-1')).status).toBe(400);
    expect((await get('/console/auth/link?token=guess-2')).status).toBe(400);
    const limited = await get('/console/auth/link?token=guess-3');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // From a peer that is not a trusted proxy, X-Forwarded-For is not believed: no way around the limit.
    expect((await get('/console/auth/link?token=guess-4', undefined, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(429);
  });

  it('leaves no token or cookie in the log; the access lines name the route only', () => {
    const text = gateway.logText();
    expect(text).not.toContain(link.searchParams.get('token')!);
    expect(text).not.toContain(cookie.split('=')[1]);
    expect(text).not.toContain('guess-');
    const lines = gateway.logs.filter((line) => line.route === '/console/auth/link');
    expect(lines.map((line) => line.status)).toEqual([302, 400, 400, 400, 429, 429]);
  });

  it('answers POST /webhooks/stripe with 404 while no webhook secret is configured', async () => {
    const response = await raw(gateway, 'POST', '/webhooks/stripe', { body: { id: 'evt_1' }, headers: { 'stripe-signature': 't=1,v1=00' } });
    expectErrorShape(response, 404);
  });
});

describe('sign-in attempts behind a trusted proxy (TOLLGATE_TRUSTED_PROXIES)', () => {
  it('are counted per forwarded client address, and a client cannot forge one further left', async () => {
    const behind = await startTestGateway([account('demo')], { trustedProxies: ['127.0.0.1'], console: { ...loadConfig({}).console, signInPerMinute: 2 } });
    try {
      const attempt = (forwardedFor: string) => get('/console/auth/link?token=x', undefined, { 'x-forwarded-for': forwardedFor }, behind).then((r) => r.status);
      expect([await attempt('203.0.113.7'), await attempt('203.0.113.7'), await attempt('203.0.113.7')]).toEqual([400, 400, 429]);
      // Another client behind the same proxy has its own allowance.
      expect(await attempt('203.0.113.8')).toBe(400);
      // The proxy appends the real peer; what the client wrote before it changes nothing.
      expect(await attempt('10.9.9.9, 203.0.113.7')).toBe(429);
    } finally {
      await behind.stop();
    }
  });
});

describe('TOLLGATE_CONSOLE=off', () => {
  it('serves no /console and no /webhooks (the chart\'s gateway pods, which may not write)', async () => {
    const off = await startTestGateway([account('demo')], { console: { ...loadConfig({ TOLLGATE_CONSOLE: 'off' }).console } });
    try {
      expect(off.consoleLink).toBeNull();
      expectErrorShape(await raw(off, 'GET', '/console/'), 404);
      expectErrorShape(await raw(off, 'POST', '/webhooks/stripe', { body: {} }), 404);
    } finally {
      await off.stop();
    }
  });
});
