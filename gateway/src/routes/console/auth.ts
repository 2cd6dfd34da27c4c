// Sign-in and sign-out: the OIDC redirect and callback, the one-time links of the embedded default.
// Every attempt counts against the client address's minute (TOLLGATE_CONSOLE_SIGNIN_PER_MINUTE). The
// code, state and link token arrive in query strings, which the access log never writes (it logs the
// route, not the URL).
import { isIP, type BlockList } from 'node:net';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import { ConsoleRefusal } from '../../console/accounts.ts';
import type { ConsoleServices } from '../../console/services.ts';
import type { PendingLogin } from '../../console/session.ts';
import { signInPage } from '../../console/views/pages.ts';
import { trustedProxies } from '../../http/request-id.ts';
import { consolePage, html, LOGIN_PURPOSE, loginCookieName, readForm, sessionCookieName, setCookie, startSession } from './http.ts';

const normalise = (address: string) => (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);
const isTrusted = (address: string, trusted: BlockList | null) => trusted !== null && isIP(address) !== 0 && trusted.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6');

/**
 * The address sign-in attempts are counted against: the peer, or — when the peer is one of
 * TOLLGATE_TRUSTED_PROXIES (the Ingress) — the nearest X-Forwarded-For hop that is not a trusted
 * proxy. Entries a client wrote itself (further left) are never believed.
 */
export function clientAddress(ctx: Context, trusted: BlockList | null): string {
  let address = normalise(ctx.req.socket.remoteAddress ?? '');
  if (!isTrusted(address, trusted)) return address;
  const hops = (ctx.get('x-forwarded-for') || '').split(',').map((hop) => normalise(hop.trim())).filter(Boolean);
  while (hops.length > 0) {
    address = hops.pop()!;
    if (!isTrusted(address, trusted)) return address;
  }
  return address;
}

export function registerAuthRoutes(router: Router, deps: GatewayDeps, services: ConsoleServices): void {
  const trusted = trustedProxies(deps.config.trustedProxies);
  const countAttempt = (ctx: Context): void => {
    const address = clientAddress(ctx, trusted);
    if (!services.attempts.allow(address)) throw new ConsoleRefusal(429, `Too many sign-in attempts from your address; try again in ${services.attempts.retryAfter(address)} seconds.`);
  };

  router.get('/console/signin', consolePage(deps, services, async (ctx, { session }) => {
    if (session) return ctx.redirect('/console/');
    html(ctx, 200, signInPage({ oidc: services.oidc !== null }));
  }));

  router.get('/console/auth/login', consolePage(deps, services, async (ctx) => {
    if (!services.oidc) throw new ConsoleRefusal(404, 'Single sign-on is not configured on this gateway.');
    countAttempt(ctx);
    let begun;
    try {
      begun = await services.oidc.begin(services.clock());
    } catch (error) {
      deps.log.warn({ reason: (error as Error).message?.slice(0, 200) }, 'console: the identity provider could not be reached');
      throw new ConsoleRefusal(502, 'The sign-in service could not be reached; try again in a moment.');
    }
    const { url, pending } = begun;
    setCookie(ctx, services, loginCookieName(services), await services.sealer.seal(LOGIN_PURPOSE, pending, pending.expiresAt), pending.expiresAt - services.clock());
    ctx.redirect(url);
  }));

  router.get('/console/auth/callback', consolePage(deps, services, async (ctx) => {
    if (!services.oidc) throw new ConsoleRefusal(404, 'Single sign-on is not configured on this gateway.');
    countAttempt(ctx);
    const pending = await services.sealer.open<PendingLogin>(LOGIN_PURPOSE, ctx.cookies.get(loginCookieName(services)));
    setCookie(ctx, services, loginCookieName(services), null);
    if (!pending) return html(ctx, 400, signInPage({ oidc: true, message: 'The sign-in took too long or was started in another browser; please sign in again.' }));
    const callback = new URL(services.oidc.redirectUri);
    callback.search = ctx.querystring;
    let user;
    try {
      user = await services.oidc.complete(callback, pending);
    } catch (error) {
      // The reason goes to the log (never the code or tokens: openid-client's messages hold neither).
      deps.log.warn({ reason: (error as Error).message?.slice(0, 200) }, 'console: sign-in refused');
      return html(ctx, 400, signInPage({ oidc: true, message: 'Sign-in failed; please try again.' }));
    }
    const session = await startSession(ctx, services, user);
    services.audit.record({ kind: 'user', session }, { action: 'signin', object: `User/${session.email ?? session.subject}`, account: null });
    ctx.redirect('/console/');
  }));

  router.get('/console/auth/link', consolePage(deps, services, async (ctx) => {
    countAttempt(ctx);
    const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
    const account = token ? services.links.redeem(token) : null;
    if (!account) return html(ctx, 400, signInPage({ oidc: services.oidc !== null, message: 'This sign-in link was already used or has expired. Restart the gateway for a new one.' }));
    const session = await startSession(ctx, services, { subject: `link:${account}`, email: null, emailVerified: false, name: `${account} (one-time link)` }, [account]);
    services.audit.record({ kind: 'user', session }, { action: 'signin', object: `Account/${account}`, account });
    ctx.redirect(`/console/accounts/${encodeURIComponent(account)}`);
  }));

  router.post('/console/auth/logout', consolePage(deps, services, async (ctx, { session }) => {
    await readForm(ctx, services, session);
    setCookie(ctx, services, sessionCookieName(services), null);
    if (session) services.audit.record({ kind: 'user', session }, { action: 'signout', object: `User/${session.email ?? session.subject}`, account: null });
    ctx.status = 303;
    ctx.redirect('/console/signin');
  }));
}
