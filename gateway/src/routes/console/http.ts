// What every console page shares: security headers (a strict CSP: scripts and styles only from the
// gateway's own files), the session cookie, the CSRF checks (Origin and a synchronizer token), form
// bodies, and errors turned into HTML pages rather than JSON.
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import type { GatewayDeps } from '../../deps.ts';
import { ConsoleRefusal } from '../../console/accounts.ts';
import type { ConsoleServices } from '../../console/services.ts';
import { newToken, sameToken, type Session } from '../../console/session.ts';
import type { SignedInUser } from '../../console/oidc.ts';
import { errorPage, type UserFrame } from '../../console/views/pages.ts';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const MAX_FORM_BYTES = 16 * 1024;
const SESSION_PURPOSE = 'console-session';
export const LOGIN_PURPOSE = 'console-login';

export interface ConsoleContext {
  console: ConsoleServices;
  session: Session | null;
}

export function sessionCookieName(services: ConsoleServices): string {
  // __Host-: only over https, for this host and path / alone; no subdomain can set or shadow it.
  return services.secureCookies ? '__Host-tollgate_session' : 'tollgate_session';
}
export function loginCookieName(services: ConsoleServices): string {
  return services.secureCookies ? '__Host-tollgate_login' : 'tollgate_login';
}

export function setCookie(ctx: Context, services: ConsoleServices, name: string, value: string | null, maxAgeMs = 0): void {
  // Secure follows the public URL, not this hop: TLS usually ends at the Ingress in front of the gateway.
  (ctx.cookies as unknown as { secure: boolean }).secure = services.secureCookies;
  ctx.cookies.set(name, value, { httpOnly: true, sameSite: 'lax', secure: services.secureCookies, path: '/', overwrite: true, signed: false, ...(value ? { maxAge: maxAgeMs } : {}) });
}

export async function readSession(ctx: Context, services: ConsoleServices): Promise<Session | null> {
  const session = await services.sealer.open<Session>(SESSION_PURPOSE, ctx.cookies.get(sessionCookieName(services)));
  return session && session.expiresAt > services.clock() ? session : null;
}

export async function startSession(ctx: Context, services: ConsoleServices, user: SignedInUser, grants?: string[]): Promise<Session> {
  const expiresAt = services.clock() + services.config.sessionTtlMs;
  const session: Session = { ...user, csrf: newToken(), expiresAt, ...(grants ? { grants } : {}) };
  setCookie(ctx, services, sessionCookieName(services), await services.sealer.seal(SESSION_PURPOSE, session, expiresAt), services.config.sessionTtlMs);
  return session;
}

export function frameOf(session: Session): UserFrame {
  return { label: session.email ?? session.name ?? session.subject, csrf: session.csrf };
}

export function securityHeaders(ctx: Context): void {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('X-Frame-Options', 'DENY');
  // same-origin: a browser then still sends Origin on the site's own form posts (with no-referrer it sends "null"),
  // and no URL of the console (a one-time link's token) ever reaches another site.
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
  ctx.set('Permissions-Policy', 'camera=(), microphone=(), geolocation=()');
  ctx.set('Cache-Control', 'no-store');
  // The API's CORS policy is for /v1; no other site may read the console's pages.
  ctx.res.removeHeader('Access-Control-Allow-Origin');
}

export function html(ctx: Context, status: number, text: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = text;
}

/** The origin a state-changing request must come from. */
function expectedOrigin(ctx: Context, services: ConsoleServices): string {
  return services.publicOrigin ?? `${ctx.protocol}://${ctx.host}`;
}

/**
 * CSRF: a change must come from a page of this site (Origin, or Referer when a browser leaves Origin
 * out) and carry the session's synchronizer token. Either failing is a 403, and nothing changes.
 */
export async function readForm(ctx: Context, services: ConsoleServices, session: Session | null): Promise<URLSearchParams> {
  const origin = ctx.get('origin') || (ctx.get('referer') ? safeOrigin(ctx.get('referer')) : '');
  if (origin !== expectedOrigin(ctx, services)) throw new ConsoleRefusal(403, 'This form did not come from this site (Origin check failed); nothing was changed.');
  if (!ctx.is('application/x-www-form-urlencoded')) throw new ConsoleRefusal(415, 'Expected a form.');
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit: MAX_FORM_BYTES, encoding: 'utf8' });
  } catch {
    throw new ConsoleRefusal(413, 'The form is too large.');
  }
  const form = new URLSearchParams(text);
  if (!session || !sameToken(form.get('_csrf') ?? undefined, session.csrf)) throw new ConsoleRefusal(403, 'The form has expired or did not come from this site (CSRF token mismatch); reload the page and try again. Nothing was changed.');
  return form;
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

type Handler = (ctx: Context, state: ConsoleContext) => Promise<void>;

/** Wraps a console handler: headers, the session, and refusals and failures as HTML pages. */
export function consolePage(deps: GatewayDeps, services: ConsoleServices, handler: Handler) {
  return async (ctx: Context) => {
    securityHeaders(ctx);
    const session = await readSession(ctx, services);
    try {
      await handler(ctx, { console: services, session });
    } catch (error) {
      if (error instanceof ConsoleRefusal) {
        if (error.status === 429) ctx.set('Retry-After', '60');
        return html(ctx, error.status, errorPage(error.status, error.message, session ? frameOf(session) : null));
      }
      deps.log.error({ err: error, path: ctx.path }, 'console: request failed');
      html(ctx, 500, errorPage(500, 'The change could not be made; nothing was lost. Try again in a moment.', session ? frameOf(session) : null));
    }
  };
}

export function requireSession(ctx: Context, session: Session | null): session is Session {
  if (session) return true;
  ctx.redirect('/console/signin');
  return false;
}
