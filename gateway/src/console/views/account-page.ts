// One account: its plan and models, limits, this month's usage, its keys (create, revoke), upgrades.
// Owners see the forms; members see the same facts read-only.
import type { AccountView } from '../accounts.ts';
import type { MonthUsage } from '../usage-days.ts';
import type { MonthTotals } from '../writer.ts';
import { html, safeHref } from './html.ts';
import { notice, page } from './layout.ts';
import type { UserFrame } from './pages.ts';
import { usageCharts } from './usage-chart.ts';

const when = (ms: number | string | null) => (ms === null ? '—' : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z').replace('T', ' '));

export function accountPage(user: UserFrame, view: AccountView, usage: { month: string; days: MonthUsage; totals: MonthTotals & { scope: 'cluster' | 'this process' } }, message?: { kind: 'error' | 'info'; text: string }): string {
  const name = view.account.metadata.name;
  const base = `/console/accounts/${encodeURIComponent(name)}`;
  const owner = view.role === 'owner';
  const limits = view.plan?.spec.limits ?? {};
  const budget = limits.tokensPerMonth;
  const tokens = usage.totals.inputTokens + usage.totals.outputTokens;
  const spent = spendOf(usage.days);
  const spendBudget = limits.spendPerMonth;
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
  <dt>Spend this month</dt><dd>${spent === null ? 'nothing priced' : spent.toFixed(2)}${spendBudget ? html` of ${spendBudget} (${Math.min(100, Math.round(((spent ?? 0) / Number(spendBudget)) * 100))}%)` : ' (no spend budget)'}</dd>
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
${usageCharts(usage.days, usage.month)}
</section>

<section aria-labelledby="keys-h">
<h2 id="keys-h">API keys</h2>
${view.keys.length === 0
  ? html`<p>No keys yet.</p>`
  : html`<table class="keys">
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col">Last used</th>${owner ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}</tr></thead>
<tbody>
${view.keys.map(
  (k) => html`<tr>
<td>${k.label}<br><span class="muted">${k.name}</span></td><td>${when(k.created)}</td><td>${when(k.expiresAt)}</td><td>${k.status}</td><td>${when(k.lastUsed)}</td>
${owner
  ? html`<td>${k.status === 'revoked'
      ? ''
      : html`<form method="post" action="${base}/keys/${encodeURIComponent(k.name)}/revoke">
<input type="hidden" name="_csrf" value="${user.csrf}">
<button type="submit" class="danger" aria-label="Revoke key ${k.label}">Revoke</button></form>`}</td>`
  : ''}
</tr>`,
)}
</tbody></table>`}
${owner
  ? html`<h3>Create a key</h3>
<form method="post" action="${base}/keys" class="create-key">
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

/** This month's spend from the per-day figures (in the prices' currency), null when nothing was priced. */
function spendOf(days: MonthUsage): number | null {
  let total: number | null = null;
  for (const models of days.values()) for (const day of models.values()) if (day.spend !== undefined) total = (total ?? 0) + day.spend;
  return total;
}
