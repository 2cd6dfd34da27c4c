// The confirmation before an owner revokes a key (WCAG 3.3.4: an action that cannot be undone is
// confirmed first). The account page's row links here; only this page's form posts the revocation.
// No script: the CSP allows none inline, and the confirmation must not depend on one.
import type { KeyRow } from '../accounts.ts';
import { when } from './account-page.ts';
import { html } from './html.ts';
import { notice, page } from './layout.ts';
import type { UserFrame } from './pages.ts';

export function revokeKeyPage(user: UserFrame, account: string, key: KeyRow): string {
  const back = `/console/accounts/${encodeURIComponent(account)}`;
  const action = `${back}/keys/${encodeURIComponent(key.name)}/revoke`;
  const body = html`
<p class="muted">Account <code>${account}</code></p>
<dl class="limits">
  <dt>Key name</dt><dd>${key.label} <span class="muted">(${key.name})</span></dd>
  <dt>Created</dt><dd>${when(key.created)}</dd>
  <dt>Last used</dt><dd>${key.lastUsed === null ? 'no use recorded' : when(key.lastUsed)}</dd>
  <dt>Expires</dt><dd>${when(key.expiresAt)}</dd>
  <dt>Status</dt><dd>${key.status}</dd>
</dl>
${key.status === 'revoked'
  ? html`${notice('info', 'This key is already revoked.')}<p><a href="${back}">Back to the account</a></p>`
  : html`<p class="warning"><strong>This cannot be undone.</strong> Every application using this key stops working within about a second: its requests are refused with 401. To keep them working, create a new key and put it in their place first.</p>
<form method="post" action="${action}" class="confirm-revoke">
  <input type="hidden" name="_csrf" value="${user.csrf}">
  <button type="submit" class="danger">Revoke key ${key.label}</button>
  <a class="button secondary" href="${back}">Cancel</a>
</form>`}`;
  return page({ title: `Revoke key ${key.label}?`, user, body });
}
