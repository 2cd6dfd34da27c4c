// The console behind an https public URL (TLS ending at an Ingress, as the chart deploys it), over raw
// HTTP: the session and sign-in cookies are __Host- prefixed, Secure, HttpOnly and SameSite; every
// page carries the full Content-Security-Policy and the other security headers; a change must come
// from the public origin (the request's own host is not enough); signing out clears the cookie.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.ts';

const PUBLIC = 'https://console.example.test';
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let gateway: TestGateway;
let idp: TestIdp;

beforeAll(async () => {
  idp = await startTestIdp(`${PUBLIC}/console/auth/callback`, { dana: { email: 'dana@example.com' } });
  const defaults = loadConfig({}).console;
  // As `npm start` runs (a demo account and its one-time link), with an https public URL and an IdP.
  gateway = await startTestGateway([], { configFileExplicit: false, bootstrapDemoKey: true, publicURL: PUBLIC, console: { ...defaults, oidc: { issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret } } });
});
afterAll(async () => {
  await gateway?.stop();
  await idp?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${gateway.url}${path}`, { redirect: 'manual', headers });
/** A Set-Cookie header's attributes, lower-cased, without the value. */
const attributes = (header: string) => header.split(';').slice(1).map((part) => part.trim().split('=')[0].toLowerCase()).sort();

describe('the console behind an https public URL', () => {
  let cookie: string;

  it('the session cookie is __Host-tollgate_session: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain', async () => {
    expect(gateway.consoleLink!.startsWith(`${PUBLIC}/console/auth/link?token=`)).toBe(true);
    const link = new URL(gateway.consoleLink!);
    const response = await get(link.pathname + link.search);
    expect(response.status).toBe(302);
    const header = response.headers.get('set-cookie')!;
    expect(header).toMatch(/^__Host-tollgate_session=[A-Za-z0-9._-]+;/);
    expect(attributes(header)).toEqual(['expires', 'httponly', 'path', 'samesite', 'secure']);
    expect(header).toMatch(/; path=\/;/);
    expect(header).toMatch(/; samesite=lax;/);
    cookie = header.split(';')[0];
    // The cookie under its plain name is not read: only the prefixed one is a session.
    expect((await get('/console/accounts/demo', { cookie: cookie.replace('__Host-', '') })).headers.get('location')).toBe('/console/signin');
    expect((await get('/console/accounts/demo', { cookie })).status).toBe(200);
  });

  it('the sign-in cookie (PKCE, state, nonce until the IdP answers) is __Host- prefixed, Secure, HttpOnly and SameSite too', async () => {
    const response = await get('/console/auth/login');
    expect(response.status).toBe(302);
    expect(response.headers.get('location')!.startsWith(idp.issuer)).toBe(true);
    const header = response.headers.get('set-cookie')!;
    expect(header).toMatch(/^__Host-tollgate_login=[A-Za-z0-9._-]+;/);
    expect(attributes(header)).toEqual(['expires', 'httponly', 'path', 'samesite', 'secure']);
  });

  it('every page carries the full CSP and the other security headers', async () => {
    for (const [path, headers] of [['/console/signin', {}], ['/console/accounts/demo', { cookie }], ['/console/accounts/nobody', { cookie }]] as const) {
      const response = await get(path, headers);
      expect(response.headers.get('content-security-policy'), path).toBe(CSP);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('referrer-policy')).toBe('same-origin');
      expect(response.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('a change must come from the public origin, and signing out clears the cookie with the same attributes', async () => {
    const page = await (await get('/console/accounts/demo', { cookie })).text();
    const csrf = page.match(/name="_csrf" value="([^"]+)"/)![1];
    const post = (origin: string) =>
      fetch(`${gateway.url}/console/auth/logout`, { method: 'POST', redirect: 'manual', headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ _csrf: csrf }) });
    // The host the request reached is not the public origin: refused, the cookie left alone.
    const refused = await post(gateway.url);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('set-cookie')).toBeNull();
    const out = await post(PUBLIC);
    expect(out.status).toBe(303);
    const cleared = out.headers.get('set-cookie')!;
    expect(cleared).toMatch(/^__Host-tollgate_session=;/);
    expect(attributes(cleared)).toEqual(['expires', 'httponly', 'path', 'samesite', 'secure']);
    expect(Date.parse(cleared.match(/expires=([^;]+)/)![1])).toBeLessThan(Date.now());
  });
});
