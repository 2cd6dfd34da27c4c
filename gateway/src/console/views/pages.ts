// The account area's pages other than the account page: sign-in, the list of accounts, the new key
// (shown once), and errors.
import type { Membership } from '../membership.ts';
import { html, type Html } from './html.ts';
import { notice, page } from './layout.ts';

export interface UserFrame {
  label: string;
  csrf: string;
}

export function signInPage(options: { oidc: boolean; message?: string }): string {
  const body = html`
${options.message ? notice('error', options.message) : ''}
${options.oidc
  ? html`<p>Sign in with your organisation's account to manage your API keys, see your usage and upgrade your plan.</p>
<p><a class="button" href="/console/auth/login">Sign in</a></p>`
  : html`<p>Single sign-on is not configured on this gateway (TOLLGATE_OIDC_ISSUER). Use the one-time sign-in link the gateway printed at start-up, or ask the platform team.</p>`}`;
  return page({ title: 'Sign in', user: null, body });
}

export function accountsPage(user: UserFrame, memberships: Membership[], options: { signupOpen: boolean }): string {
  const body =
    memberships.length > 0
      ? html`<p>The accounts you belong to:</p>
<ul class="accounts">
${memberships.map(
  (m) => html`<li><a href="/console/accounts/${encodeURIComponent(m.account.metadata.name)}">${m.account.spec.displayName ?? m.account.metadata.name}</a>
  <span class="muted">${m.account.metadata.name} · ${m.role} · plan ${m.account.spec.plan ?? 'free'}</span></li>`,
)}
</ul>`
      : options.signupOpen
        ? html`<p>You do not belong to any account yet. Register to get a free account (the <code>service-test</code> model) with you as its owner.</p>
<form method="post" action="/console/register">
  <input type="hidden" name="_csrf" value="${user.csrf}">
  <button type="submit">Create my account</button>
</form>`
        : html`<p>You do not belong to any account. Ask the platform team to add your e-mail address to an Account's <code>spec.members</code>.</p>`;
  return page({ title: 'Your accounts', user, body });
}

export function newKeyPage(user: UserFrame, account: string, created: { key: string; name: string; label: string }): string {
  const body = html`
${notice('info', `Key "${created.label}" was created. Copy it now: it is shown only this once, and only its SHA-256 hash is stored.`)}
<div class="secret">
  <label for="new-key">Your new API key (${created.name})</label>
  <input id="new-key" type="text" readonly value="${created.key}" autocomplete="off" spellcheck="false">
  <button type="button" data-copy="new-key">Copy</button>
  <span class="copied" role="status" aria-live="polite"></span>
</div>
<p>Keep it in a server-side environment variable, never in browser code. If it leaks, revoke it and create another.</p>
<p><a href="/console/accounts/${encodeURIComponent(account)}">Back to the account</a></p>`;
  return page({ title: 'New API key', user, body });
}

export function errorPage(status: number, message: string, user: UserFrame | null): string {
  const title = status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : status === 429 ? 'Too many attempts' : status >= 500 ? 'Something went wrong' : 'Cannot do that';
  const body: Html = html`${notice('error', message)}<p><a href="/console/">Back to your accounts</a></p>`;
  return page({ title, user, body });
}
