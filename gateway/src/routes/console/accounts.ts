// The signed-in pages: the accounts list, an account, creating keys, revoking them (confirmed first), registration, and
// the way out to a payment page. Who may do what is decided by console/accounts.ts; here, only HTTP.
import type Router from '@koa/router';
import type { GatewayDeps } from '../../deps.ts';
import { ConsoleRefusal } from '../../console/accounts.ts';
import type { ConsoleServices } from '../../console/services.ts';
import { accountPage } from '../../console/views/account-page.ts';
import { accountsPage, newKeyPage } from '../../console/views/pages.ts';
import { revokeKeyPage } from '../../console/views/revoke-page.ts';
import { consolePage, frameOf, html, readForm, requireSession } from './http.ts';

export function registerAccountRoutes(router: Router, deps: GatewayDeps, services: ConsoleServices): void {
  const { accounts } = services;

  router.get(['/console', '/console/'], consolePage(deps, services, async (ctx, { session }) => {
    if (!requireSession(ctx, session)) return;
    html(ctx, 200, accountsPage(frameOf(session), accounts.accountsOf(session), { signupOpen: services.config.signupOpen }));
  }));

  router.post('/console/register', consolePage(deps, services, async (ctx, { session }) => {
    await readForm(ctx, services, session);
    if (!session) throw new ConsoleRefusal(403, 'Sign in first.');
    if (!services.config.signupOpen) throw new ConsoleRefusal(404, 'No such page.');
    const name = await accounts.register(session);
    ctx.status = 303;
    ctx.redirect(`/console/accounts/${encodeURIComponent(name)}`);
  }));

  router.get('/console/accounts/:account', consolePage(deps, services, async (ctx, { session }) => {
    if (!requireSession(ctx, session)) return;
    const { view, usage } = await accounts.page(session, ctx.params.account);
    html(ctx, 200, accountPage(frameOf(session), view, usage));
  }));

  router.post('/console/accounts/:account/keys', consolePage(deps, services, async (ctx, { session }) => {
    const form = await readForm(ctx, services, session);
    const created = await accounts.createKey(session!, ctx.params.account, { label: form.get('label') ?? '', expires: form.get('expires') ?? '' });
    // Answered directly (no redirect): the key is in this one response, which no cache keeps (no-store).
    html(ctx, 201, newKeyPage(frameOf(session!), ctx.params.account, created));
  }));

  // The confirmation page: changes nothing; its form posts to the route below.
  router.get('/console/accounts/:account/keys/:key/revoke', consolePage(deps, services, async (ctx, { session }) => {
    if (!requireSession(ctx, session)) return;
    const key = await accounts.keyToRevoke(session, ctx.params.account, ctx.params.key);
    html(ctx, 200, revokeKeyPage(frameOf(session), ctx.params.account, key));
  }));

  router.post('/console/accounts/:account/keys/:key/revoke', consolePage(deps, services, async (ctx, { session }) => {
    await readForm(ctx, services, session);
    await accounts.revokeKey(session!, ctx.params.account, ctx.params.key);
    ctx.status = 303;
    ctx.redirect(`/console/accounts/${encodeURIComponent(ctx.params.account)}`);
  }));

  router.get('/console/accounts/:account/upgrade/:plan', consolePage(deps, services, async (ctx, { session }) => {
    if (!requireSession(ctx, session)) return;
    ctx.redirect(accounts.upgradeUrl(session, ctx.params.account, ctx.params.plan));
  }));
}
