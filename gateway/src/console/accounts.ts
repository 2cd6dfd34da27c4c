// What a signed-in user does in the account area: see their accounts, create and revoke keys,
// register, start an upgrade. Every check of who may do what is here (the routes only translate);
// every change is written through the ConsoleWriter and recorded in the audit log.
import { randomInt } from 'node:crypto';
import { API_VERSION, validateManifest, type Account, type ApiKey, type Plan } from '@tollgate/crds';
import { parseMoney } from '../limits/money.ts';
import { generateKey, hashKey } from '../resources/keys.ts';
import type { Snapshot } from '../resources/snapshot.ts';
import type { ResourceStore } from '../resources/store.ts';
import type { AuditLog } from './audit.ts';
import { membershipIn, membershipsOf, type Membership } from './membership.ts';
import type { Session } from './session.ts';
import type { ReplicaUsage } from './replica-usage.ts';
import { addMonth, emptyMonth, type KeyUse, type MonthUsage, type UsageDays } from './usage-days.ts';
import { CREATED_BY_ANNOTATION, type ConsoleWriter, type MonthTotals } from './writer.ts';

export const DISPLAY_NAME_ANNOTATION = 'tollgate.dev/display-name';
const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const LABEL_MAX = 64;

/** A refusal the user can act on (shown on the page); `status` is the HTTP status of that page. */
export class ConsoleRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export const notFound = () => new ConsoleRefusal(404, 'No such page.');

export interface KeyRow {
  name: string;
  label: string;
  created: string | null;
  expiresAt: string | null;
  status: 'active' | 'revoked' | 'expired';
  /** When any gateway replica last saw the key (ms since the epoch); null when none did since it started. */
  lastUsed: number | null;
  /** This month's spend through the key, in micros; null when nothing it did was priced. */
  spend: number | null;
  /** The key's own ApiKey.spec.limits.spendPerMonth, in micros; null without one. */
  spendBudget: number | null;
}

/** This month's usage of an account, as the page draws it. Money in micros of `currency`. */
export interface AccountUsage {
  month: string;
  days: MonthUsage;
  totals: MonthTotals & { scope: 'cluster' | 'this process' };
  currency: string;
}

export interface AccountView extends Membership {
  plan: Plan | null;
  models: string[];
  keys: KeyRow[];
  /** Plans with a payment link the account could move to. */
  upgrades: Plan[];
}

function suffix(length = 5): string {
  let out = '';
  for (let i = 0; i < length; i++) out += SUFFIX_ALPHABET[randomInt(SUFFIX_ALPHABET.length)];
  return out;
}

const actorName = (session: Session) => session.email ?? session.subject;

/** How long a write waits to show in the snapshot (Kubernetes: the informer's event) before the page is drawn anyway. */
const SETTLE_MS = 3000;

export class AccountConsole {
  readonly #store: ResourceStore;
  readonly #writer: ConsoleWriter;
  readonly #audit: AuditLog;
  readonly #usage: UsageDays;
  readonly #keyPrefix: string;
  readonly #clock: () => number;
  readonly #replicaUsage: ReplicaUsage | null;
  readonly #currency: string;

  constructor(options: { store: ResourceStore; writer: ConsoleWriter; audit: AuditLog; usage: UsageDays; replicaUsage?: ReplicaUsage | null; keyPrefix: string; currency: string; clock: () => number }) {
    this.#replicaUsage = options.replicaUsage ?? null;
    this.#currency = options.currency;
    this.#store = options.store;
    this.#writer = options.writer;
    this.#audit = options.audit;
    this.#usage = options.usage;
    this.#keyPrefix = options.keyPrefix;
    this.#clock = options.clock;
  }

  get usage(): UsageDays {
    return this.#usage;
  }

  accountsOf(session: Session): Membership[] {
    return membershipsOf(this.#store.current, session);
  }

  /** Resolves once the snapshot satisfies `done` (the change is visible to the next page), or after SETTLE_MS. */
  #settle(done: (snapshot: Snapshot) => boolean): Promise<void> {
    if (done(this.#store.current)) return Promise.resolve();
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        stop();
        resolve();
      };
      const timer = setTimeout(finish, SETTLE_MS);
      const stop = this.#store.onChange((snapshot) => {
        if (done(snapshot)) finish();
      });
    });
  }

  #member(session: Session, name: string, snapshot: Snapshot = this.#store.current): Membership {
    const membership = membershipIn(snapshot, session, name);
    if (!membership) throw notFound();
    return membership;
  }

  #owner(session: Session, name: string): Membership {
    const membership = this.#member(session, name);
    if (membership.role !== 'owner') throw new ConsoleRefusal(403, 'Only an owner of this account may do that.');
    return membership;
  }

  view(session: Session, name: string): AccountView {
    const snapshot = this.#store.current;
    const membership = this.#member(session, name, snapshot);
    const plan = snapshot.planOf(membership.account);
    const now = this.#clock();
    const keys: KeyRow[] = [...snapshot.keysByHash.values()]
      .filter((key) => key.spec.account === name)
      .map((key) => ({
        name: key.metadata.name,
        label: key.metadata.annotations?.[DISPLAY_NAME_ANNOTATION] ?? key.metadata.name,
        created: key.metadata.creationTimestamp ?? null,
        expiresAt: key.spec.expiresAt ?? null,
        status: key.spec.revoked ? 'revoked' : key.spec.expiresAt && Date.parse(key.spec.expiresAt) <= now ? 'expired' : 'active',
        lastUsed: null,
        spend: null,
        spendBudget: key.spec.limits?.spendPerMonth ? parseMoney(key.spec.limits.spendPerMonth) : null,
      }));
    keys.sort((a, b) => (a.status === b.status ? (b.created ?? '').localeCompare(a.created ?? '') : a.status === 'active' ? -1 : 1));
    const upgrades = [...snapshot.plans.values()].filter((p) => p.spec.billing?.paymentLink && p.metadata.name !== plan?.metadata.name);
    return { ...membership, plan, models: snapshot.catalogueFor(membership.account).entries.map((e) => e.id), keys, upgrades };
  }

  /** An account's page: its view, with each key's last use and spend from this month's usage. */
  async page(session: Session, name: string): Promise<{ view: AccountView; usage: AccountUsage }> {
    const view = this.view(session, name);
    const { keys, ...usage } = await this.#monthUsage(name);
    for (const row of view.keys) {
      const use = keys.get(row.name);
      row.lastUsed = use?.lastUsed ?? null;
      row.spend = use?.spend ?? null;
    }
    return { view, usage };
  }

  /**
   * This month per day and model and per key — every gateway replica's in Kubernetes (ReplicaUsage),
   * this process's standalone — and the month's totals: the operator's cluster-wide roll-up
   * (Account.status.usage, whose spend is the Account's SPEND column) when there is one, else the
   * days added up. Money stays in integer micros throughout.
   */
  async #monthUsage(name: string): Promise<AccountUsage & { keys: Map<string, KeyUse> }> {
    const month = this.#usage.month;
    let usage = this.#replicaUsage && (await this.#replicaUsage.accountMonth(name, month).catch(() => null));
    if (!usage) addMonth((usage = emptyMonth()), month, this.#usage.accountJson(name));
    const local: MonthTotals = { month, requests: 0, inputTokens: 0, outputTokens: 0, spend: null, currency: this.#currency };
    for (const models of usage.days.values()) {
      for (const u of models.values()) {
        local.requests += u.requests;
        local.inputTokens += u.inputTokens;
        local.outputTokens += u.outputTokens;
        if (u.spend !== undefined) local.spend = (local.spend ?? 0) + u.spend;
      }
    }
    const cluster = await this.#writer.clusterUsage(name).catch(() => null);
    const totals = cluster && cluster.month === month ? { ...cluster, scope: 'cluster' as const } : { ...local, scope: 'this process' as const };
    return { month, days: usage.days, keys: usage.keys, totals, currency: totals.currency ?? this.#currency };
  }

  /** Creates a key; the full key is returned for the page to show once and is not kept anywhere. */
  async createKey(session: Session, account: string, input: { label: string; expires: string }): Promise<{ key: string; name: string; label: string }> {
    this.#owner(session, account);
    const label = input.label.trim();
    if (label.length === 0 || label.length > LABEL_MAX || /[\u0000-\u001f\u007f]/.test(label)) throw new ConsoleRefusal(400, `Give the key a name of 1 to ${LABEL_MAX} characters.`);
    let expiresAt: string | undefined;
    if (input.expires) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(input.expires) || Number.isNaN(Date.parse(`${input.expires}T23:59:59Z`))) throw new ConsoleRefusal(400, 'The expiry must be a date (YYYY-MM-DD).');
      expiresAt = `${input.expires}T23:59:59Z`;
      if (Date.parse(expiresAt) <= this.#clock()) throw new ConsoleRefusal(400, 'The expiry date is in the past; the key would never work.');
    }
    const name = `${account.slice(0, 240).replace(/[-.]+$/, '')}-${suffix()}`;
    const key = generateKey(this.#keyPrefix);
    const manifest: ApiKey = {
      apiVersion: API_VERSION,
      kind: 'ApiKey',
      metadata: { name, annotations: { [DISPLAY_NAME_ANNOTATION]: label, [CREATED_BY_ANNOTATION]: actorName(session) } },
      spec: { account, keyHash: hashKey(key), ...(expiresAt ? { expiresAt } : {}) },
    };
    const checked = validateManifest(manifest);
    if (!checked.ok) throw new ConsoleRefusal(400, `The key would be invalid: ${checked.problems.map((p) => `${p.field} ${p.message}`).join('; ')}`);
    await this.#writer.createKey(manifest);
    await this.#settle((snapshot) => snapshot.keysByHash.has(manifest.spec.keyHash!));
    this.#audit.record({ kind: 'user', session }, { action: 'apikey.create', object: `ApiKey/${name}`, account, detail: { label, expiresAt: expiresAt ?? null } });
    return { key, name, label };
  }

  /**
   * The key an owner is about to revoke, as its row on the account page (last use included), for the
   * confirmation page. The same checks as revokeKey: owners only, and another account's key is a 404.
   */
  async keyToRevoke(session: Session, account: string, keyName: string): Promise<KeyRow> {
    this.#owner(session, account);
    const { view } = await this.page(session, account);
    const key = view.keys.find((k) => k.name === keyName);
    if (!key) throw notFound();
    return key;
  }

  async revokeKey(session: Session, account: string, keyName: string): Promise<void> {
    this.#owner(session, account);
    const key = [...this.#store.current.keysByHash.values()].find((k) => k.metadata.name === keyName && k.spec.account === account);
    // Another account's key is as unknown as a key that does not exist.
    if (!key) throw notFound();
    if (!key.spec.revoked) {
      await this.#writer.revokeKey(keyName);
      const hash = key.spec.keyHash!;
      await this.#settle((snapshot) => snapshot.keysByHash.get(hash)?.spec.revoked === true || !snapshot.keysByHash.has(hash));
    }
    this.#audit.record({ kind: 'user', session }, { action: 'apikey.revoke', object: `ApiKey/${keyName}`, account });
  }

  /** Registration (TOLLGATE_CONSOLE_SIGNUP=open): a free-tier account with the user as its owner. */
  async register(session: Session): Promise<string> {
    if (this.accountsOf(session).length > 0) throw new ConsoleRefusal(409, 'You already belong to an account.');
    const member = session.emailVerified && session.email ? { email: session.email, role: 'owner' as const } : { subject: session.subject, role: 'owner' as const };
    const base = (session.email?.split('@')[0] ?? 'account').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'account';
    const name = `${base}-${suffix(4)}`;
    const account: Account = {
      apiVersion: API_VERSION,
      kind: 'Account',
      metadata: { name, annotations: { [CREATED_BY_ANNOTATION]: actorName(session) } },
      spec: { displayName: session.name ?? session.email ?? name, members: [member] },
    };
    const checked = validateManifest(account);
    if (!checked.ok) throw new ConsoleRefusal(400, `The account would be invalid: ${checked.problems.map((p) => `${p.field} ${p.message}`).join('; ')}`);
    await this.#writer.createAccount(account);
    await this.#settle((snapshot) => snapshot.accounts.has(name));
    this.#audit.record({ kind: 'user', session }, { action: 'account.create', object: `Account/${name}`, account: name });
    return name;
  }

  /** The payment page for an upgrade, with the account as client_reference_id (Stripe Payment Links read it). */
  upgradeUrl(session: Session, account: string, planName: string): string {
    this.#owner(session, account);
    const plan = this.#store.current.plans.get(planName);
    const link = plan?.spec.billing?.paymentLink;
    if (!link) throw notFound();
    const url = new URL(link);
    url.searchParams.set('client_reference_id', account);
    if (session.email) url.searchParams.set('prefilled_email', session.email);
    return url.href;
  }
}
