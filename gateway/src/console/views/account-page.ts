// One account: its plan and models, limits, this month's usage, its keys (create, revoke), upgrades.
// Owners see the forms; members see the same facts read-only.
import { formatMoney, parseMoney } from '../../limits/money.ts';
import type { AccountUsage, AccountView } from '../accounts.ts';
import { html, safeHref, type Html } from './html.ts';
import { notice, page } from './layout.ts';
import type { UserFrame } from './pages.ts';
import { usageCharts } from './usage-chart.ts';

/** A time as the console shows it: "2026-11-27 23:40:12Z"; "—" for none. */
export const when = (ms: number | string | null) => (ms === null ? '—' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z').replace('T', ' '));

/** Money (micros) with its currency: "0.004 USD", never rounded to "0.00". */
const money = (micros: number, currency: string) => `${formatMoney(micros)} ${currency}`;

/** Spent against a budget, both in micros: "1.25 USD of 5.00 USD (25%)"; the share in whole percent, by integers. */
function against(spent: number | null, budget: number | null, currency: string, unpriced: string, noBudget: string): Html | string {
  const shown = spent === null ? unpriced : money(spent, currency);
  if (budget === null) return html`${shown}${noBudget}`;
  const share = budget > 0 ? Math.min(100, Math.floor(((spent ?? 0) * 100) / budget)) : 100;
  return html`${shown} of ${money(budget, currency)} (${share}%)`;
}

export function accountPage(user: UserFrame, view: AccountView, usage: AccountUsage, message?: { kind: 'error' | 'info'; text: string }): string {
  const name = view.account.metadata.name;
  const base = `/console/accounts/${encodeURIComponent(name)}`;
  const owner = view.role === 'owner';
  const limits = view.plan?.spec.limits ?? {};
  const budget = limits.tokensPerMonth;
  const tokens = usage.totals.inputTokens + usage.totals.outputTokens;
  const currency = usage.currency;
  const spendBudget = limits.spendPerMonth ? parseMoney(limits.spendPerMonth) : null;
  const body = html`
${message ? notice(message.kind, message.text) : ''}
<p class="muted">Account <code>${name}</code> · your role: ${view.role}</p>

<section aria-labelledby="plan-h">
<h2 id="plan-h">Plan</h2>
<p>Plan: <strong>${view.plan?.metadata.name ?? 'free tier'}</strong></p>
<p>Models your keys can use: ${view.models.map((m, i) => html`${i > 0 ? ', ' : ''}<code>${m}</code>`)}</p>
<dl class="limits">
  <dt>Requests per minute</dt><dd>${limits.requestsPerMinute ?? 'not limited'}</dd>
  <dt>Tokens per minute</dt><dd>${limits.tokensPerMinute ?? 'not limited'}</dd>
  <dt>Concurrent requests</dt><dd>${limits.concurrentRequests ?? 'not limited'}</dd>
  <dt>Requests this month</dt><dd>${usage.totals.requests.toLocaleString('en')}</dd>
  <dt>Tokens this month</dt><dd>${tokens.toLocaleString('en')}${budget ? html` of ${budget.toLocaleString('en')} (${Math.min(100, Math.round((tokens / budget) * 100))}%)` : ' (no monthly budget)'}</dd>
  <dt>Spend this month</dt><dd class="spend">${against(usage.totals.spend, spendBudget, currency, 'nothing priced', ' (no spend budget)')}</dd>
</dl>
${owner && view.upgrades.length > 0
  ? html`<h3>Upgrade</h3><ul class="upgrades">${view.upgrades.map(
      (p) => html`<li><a class="button" href="${safeHref(`${base}/upgrade/${encodeURIComponent(p.metadata.name)}`)}">Upgrade to ${p.metadata.name}</a> <span class="muted">models: ${p.spec.models.join(', ')}</span></li>`,
    )}</ul><p class="muted">Payment opens in the payment provider's page; the plan changes when the payment is confirmed, and your existing keys get the new models on their next request.</p>`
  : ''}
</section>

<section aria-labelledby="usage-h">
<h2 id="usage-h">Usage in ${usage.month}</h2>
${usage.totals.scope === 'cluster'
  ? html`<p class="muted">Totals above: every gateway replica, as the operator last counted them.</p>`
  : ''}
${usageCharts(usage.days, usage.month, currency)}
</section>

<section aria-labelledby="keys-h">
<h2 id="keys-h">API keys</h2>
${view.keys.length === 0
  ? html`<p>No keys yet.</p>`
  : html`<table class="keys" aria-labelledby="keys-h">
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col">Last used</th><th scope="col">Spend this month</th>${owner ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}</tr></thead>
<tbody>
${view.keys.map(
  (k) => html`<tr>
<td>${k.label}<br><span class="muted">${k.name}</span></td><td>${when(k.created)}</td><td>${when(k.expiresAt)}</td><td>${k.status}</td><td>${when(k.lastUsed)}</td><td>${against(k.spend, k.spendBudget, currency, '—', '')}</td>
${owner
  ? html`<td>${k.status === 'revoked'
      ? ''
      : // A link to the confirmation page (revoke-page.ts), never the revocation itself: it cannot be undone.
        html`<a class="button danger" href="${base}/keys/${encodeURIComponent(k.name)}/revoke" aria-label="Revoke key ${k.label}">Revoke</a>`}</td>`
  : ''}
</tr>`,
)}
</tbody></table>`}
${owner
  ? html`<h3 id="create-key-h">Create a key</h3>
<form method="post" action="${base}/keys" class="create-key" aria-labelledby="create-key-h">
  <input type="hidden" name="_csrf" value="${user.csrf}">
  <div><label for="key-name">Key name</label>
  <input id="key-name" name="label" required maxlength="64" placeholder="e.g. backend-prod"></div>
  <div><label for="key-expires">Expires on (optional)</label>
  <input id="key-expires" name="expires" type="date"></div>
  <button type="submit">Create key</button>
</form>`
  : html`<p class="muted">Only an owner of this account can create and revoke keys.</p>`}
</section>`;
  return page({ title: view.account.spec.displayName ?? name, user, body });
}
