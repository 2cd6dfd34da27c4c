// The account area's pure pieces: escaping, membership, payment bookkeeping, sealed sessions, and the
// per-day usage's bounds.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Account } from '@tollgate/crds';
import { roleIn } from './membership.ts';
import { SessionSealer, type Session } from './session.ts';
import { addMonth, emptyMonth, UsageDays } from './usage-days.ts';
import { html, safeHref } from './views/html.ts';
import { paymentAnnotations, REMEMBERED_EVENTS, STRIPE_EVENTS_ANNOTATION } from './writer.ts';

const session = (over: Partial<Session> = {}): Session => ({ subject: 'sub-1', email: 'ada@example.com', emailVerified: true, name: null, csrf: 'x', expiresAt: Date.now() + 60_000, ...over });
const accountWith = (members: NonNullable<Account['spec']['members']>): Account => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Account', metadata: { name: 'acme' }, spec: { members } });

describe('html templates', () => {
  it('escape every interpolated value, and nest templates without escaping them twice', () => {
    const name = `<script>alert("x")</script>' \``;
    const out = html`<p title="${name}">${name}${html`<b>${'&'}</b>`}</p>`.text;
    expect(out).toBe('<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; &#96;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; &#96;<b>&amp;</b></p>');
  });
  it('allow only http(s) and same-site paths in links', () => {
    expect(safeHref('javascript:alert(1)')).toBe('#');
    expect(safeHref('//evil.example/x')).toBe('#');
    expect(safeHref('/console/x')).toBe('/console/x');
    expect(safeHref('https://buy.stripe.com/a')).toBe('https://buy.stripe.com/a');
  });
});

describe('membership', () => {
  it('matches a verified e-mail without regard to case, or the subject; an unverified e-mail matches nothing', () => {
    const account = accountWith([{ email: 'ADA@example.com', role: 'member' }, { subject: 'sub-2', role: 'owner' }]);
    expect(roleIn(account, session())).toBe('member');
    expect(roleIn(account, session({ emailVerified: false }))).toBeNull();
    expect(roleIn(account, session({ subject: 'sub-2', email: null }))).toBe('owner');
    expect(roleIn(account, session({ subject: 'sub-3', email: 'eve@example.com' }))).toBeNull();
  });
  it('takes owner over member when a person is listed twice, and a one-time link grants its account only', () => {
    expect(roleIn(accountWith([{ email: 'ada@example.com', role: 'member' }, { subject: 'sub-1', role: 'owner' }]), session())).toBe('owner');
    expect(roleIn(accountWith([]), session({ grants: ['acme'] }))).toBe('owner');
    expect(roleIn(accountWith([]), session({ grants: ['other'] }))).toBeNull();
  });
});

describe('payment bookkeeping', () => {
  it('records each event id once and keeps the newest few', () => {
    let annotations: Record<string, string> = {};
    for (let i = 0; i < REMEMBERED_EVENTS + 5; i++) {
      const next = paymentAnnotations(annotations, `evt_${i}`, { plan: 'pro', customer: 'cus_1' });
      if (next === 'duplicate') throw new Error('a new event was taken for a repeat');
      annotations = { ...annotations, ...next };
    }
    const kept = annotations[STRIPE_EVENTS_ANNOTATION].split(',');
    expect(kept).toHaveLength(REMEMBERED_EVENTS);
    expect(kept.at(-1)).toBe(`evt_${REMEMBERED_EVENTS + 4}`);
    expect(paymentAnnotations(annotations, `evt_${REMEMBERED_EVENTS + 4}`, { plan: null })).toBe('duplicate');
  });
});

describe('sealed sessions', () => {
  it('open only what they sealed, for the same purpose, before it expires; the key survives a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-seal-'));
    try {
      const sealer = await SessionSealer.create(null, dir);
      const token = await sealer.seal('a', { who: 'ada' }, Date.now() + 60_000);
      expect(token).not.toContain('ada');
      expect(await sealer.open('a', token)).toEqual({ who: 'ada' });
      expect(await sealer.open('b', token)).toBeNull();
      expect(await sealer.open('a', `${token.slice(0, -3)}abc`)).toBeNull();
      expect(await sealer.open('a', await sealer.seal('a', { who: 'ada' }, Date.now() - 1000))).toBeNull();
      expect(await (await SessionSealer.create(null, dir)).open('a', token)).toEqual({ who: 'ada' });
      expect(await (await SessionSealer.create('another secret', dir)).open('a', token)).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('usage per day and model', () => {
  it('adds up per day and model, folds models past the day\'s limit into other, and starts afresh each month', () => {
    let now = Date.UTC(2026, 10, 3, 12);
    const usage = new UsageDays(() => now);
    for (let i = 0; i < 15; i++) usage.record({ account: 'a', key: 'k', model: `m${i}`, inputTokens: 1, outputTokens: 2 });
    usage.record({ account: 'a', key: 'k', model: 'm0', inputTokens: 10, outputTokens: 0, spend: 4000 });
    const day = usage.accountMonth('a').get(3)!;
    expect(day.size).toBe(12);
    expect(day.get('m0')).toEqual({ requests: 2, inputTokens: 11, outputTokens: 2, spend: 4000 });
    expect(day.get('other')?.requests).toBe(4);
    expect(usage.accountKeys('a').get('k')).toEqual({ lastUsed: now, spend: 4000 });
    const used = now;
    now = Date.UTC(2026, 11, 1);
    expect(usage.month).toBe('2026-12');
    expect(usage.accountMonth('a').size).toBe(0);
    // The key's last use outlives the month; its spend does not.
    expect(usage.accountKeys('a').get('k')).toEqual({ lastUsed: used });
  });
  it('stops adding cells and keys past its bounds, counting the cells it dropped', () => {
    const usage = new UsageDays(() => Date.UTC(2026, 10, 3), { maxCells: 2, maxKeys: 2 });
    usage.record({ account: 'a', key: 'k1', model: 'x', inputTokens: 1, outputTokens: 1, spend: 500_000 });
    usage.record({ account: 'b', key: 'k2', model: 'x', inputTokens: 1, outputTokens: 1 });
    usage.record({ account: 'c', key: 'k3', model: 'x', inputTokens: 1, outputTokens: 1 });
    expect(usage.accountMonth('c').size).toBe(0);
    expect(usage.accountKeys('c').size).toBe(0);
    expect(usage.dropped).toBe(1);
    expect(usage.accountMonth('a').get(3)?.get('x')?.spend).toBe(500_000);
  });
  it('answers spend as decimal strings in micros, exactly: 0.1 + 0.2 is 0.30 and $0.004 is not 0.00', () => {
    const usage = new UsageDays(() => Date.UTC(2026, 10, 3, 8));
    usage.record({ account: 'a', key: 'k', model: 'x', inputTokens: 1, outputTokens: 1, spend: 100_000 });
    usage.record({ account: 'a', key: 'k', model: 'x', inputTokens: 1, outputTokens: 1, spend: 200_000 });
    usage.record({ account: 'a', key: 'small', model: 'y', inputTokens: 1, outputTokens: 1, spend: 4000 });
    expect(usage.accountJson('a')).toEqual({
      month: '2026-11',
      days: { 3: { x: { requests: 2, inputTokens: 2, outputTokens: 2, spend: '0.30' }, y: { requests: 1, inputTokens: 1, outputTokens: 1, spend: '0.004' } } },
      keys: { k: { lastUsed: '2026-11-03T08:00:00.000Z', spend: '0.30' }, small: { lastUsed: '2026-11-03T08:00:00.000Z', spend: '0.004' } },
    });
  });
  it('adds replicas\' answers of the same month (spend exactly), takes the latest last use, and ignores other months and malformed answers', () => {
    let now = Date.UTC(2026, 10, 3, 9);
    const one = new UsageDays(() => now);
    one.record({ account: 'a', key: 'k', model: 'x', inputTokens: 1, outputTokens: 2, spend: 100_000 });
    now = Date.UTC(2026, 10, 3, 10);
    const two = new UsageDays(() => now);
    two.record({ account: 'a', key: 'k', model: 'x', inputTokens: 1, outputTokens: 2, spend: 200_000 });
    const sum = emptyMonth();
    addMonth(sum, '2026-11', JSON.parse(JSON.stringify(two.accountJson('a'))));
    addMonth(sum, '2026-11', one.accountJson('a'));
    addMonth(sum, '2026-10', one.accountJson('a'));
    addMonth(sum, '2026-11', { month: '2026-11', days: { '40': { x: { requests: 9 } }, '3': 'nonsense', '4': { x: { requests: 1, spend: 0.5 } } }, keys: { k: { lastUsed: 'yesterday' } } });
    addMonth(sum, '2026-11', null);
    expect([...sum.days.keys()]).toEqual([3, 4]);
    expect(sum.days.get(3)?.get('x')).toEqual({ requests: 2, inputTokens: 2, outputTokens: 4, spend: 300_000 });
    // A float from an older replica is not money: not added.
    expect(sum.days.get(4)?.get('x')).toEqual({ requests: 1, inputTokens: 0, outputTokens: 0 });
    // Last use: the latest of any replica (the other month's answer too); spend: this month's only.
    expect(sum.keys.get('k')).toEqual({ lastUsed: Date.UTC(2026, 10, 3, 10), spend: 300_000 });
  });
});
