// This month's usage per account, day and model, and per key its last use and spend, for the account
// area's chart and key list. Fed by the end of every authenticated exchange at this process; kept in
// memory, rolled over with the month, and bounded: models beyond a few per account and day are
// folded into "other", and past a total number of cells new ones are not added (counted as dropped).
// Per process by design, as the /usage ledger is (ADR 0012): in Kubernetes the console's pods serve
// no API traffic, so they read every gateway replica's `GET /usage/days` (replica-usage.ts).
// Spend is kept in integer micros of the currency (limits/money.ts) and travels as a decimal string,
// as GET /usage writes it: sums over days and replicas are exact.
import { formatMoney, parseMoney } from '../limits/money.ts';

export interface DayUsage {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Set only when a request was priced: money spent, in micros of the currency. */
  spend?: number;
}

/** One key's use as the page shows it: when last used (ms since the epoch), this month's spend in micros when priced. */
export interface KeyUse {
  lastUsed: number;
  spend?: number;
}

/** The account's month across replicas (or at this process): per day and model, and per key. */
export interface AccountMonth {
  days: MonthUsage;
  keys: Map<string, KeyUse>;
}

/** `GET /usage/days?account=` (the metrics port): spend as decimal strings, last use as ISO time. */
export interface AccountMonthJson {
  month: string;
  days: Record<string, Record<string, { requests: number; inputTokens: number; outputTokens: number; spend?: string }>>;
  keys: Record<string, { lastUsed: string; spend?: string }>;
}

export interface UsageRecord {
  account: string;
  key: string;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  /** The settled cost in micros; absent for an unpriced request. */
  spend?: number;
}

/** day of month (1–31) → model → usage */
export type MonthUsage = Map<number, Map<string, DayUsage>>;

const MODELS_PER_DAY = 12;
const DAY_MS = 24 * 3600 * 1000;
const OTHER = 'other';
const NO_MODEL = 'no model';

/** A decimal string of money in micros; null for anything else (a malformed or older replica's answer). */
function microsOf(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  try {
    return parseMoney(value);
  } catch {
    return null;
  }
}

/**
 * Adds one replica's answer (UsageDays.accountJson) into `into`: days and spend summed, last use the
 * latest of any replica. Days of another month are skipped (a replica not yet rolled over), last use is not.
 */
export function addMonth(into: AccountMonth, month: string, answer: unknown): void {
  const a = answer as Partial<AccountMonthJson> | null;
  if (!a || typeof a !== 'object') return;
  if (typeof a.keys === 'object' && a.keys !== null) {
    for (const [key, use] of Object.entries(a.keys).slice(0, 10_000)) {
      const at = Date.parse(String(use?.lastUsed));
      if (!Number.isFinite(at)) continue;
      const cell = into.keys.get(key) ?? { lastUsed: at };
      cell.lastUsed = Math.max(cell.lastUsed, at);
      const spend = a.month === month ? microsOf(use?.spend) : null;
      if (spend !== null) cell.spend = (cell.spend ?? 0) + spend;
      into.keys.set(key, cell);
    }
  }
  if (a.month !== month || typeof a.days !== 'object' || a.days === null) return;
  for (const [dayText, models] of Object.entries(a.days)) {
    const day = Number(dayText);
    if (!Number.isInteger(day) || day < 1 || day > 31 || typeof models !== 'object' || models === null) continue;
    let target = into.days.get(day);
    if (!target) into.days.set(day, (target = new Map()));
    for (const [model, usage] of Object.entries(models).slice(0, 64)) {
      const cell = target.get(model) ?? { requests: 0, inputTokens: 0, outputTokens: 0 };
      cell.requests += Number(usage?.requests) || 0;
      cell.inputTokens += Number(usage?.inputTokens) || 0;
      cell.outputTokens += Number(usage?.outputTokens) || 0;
      const spend = microsOf(usage?.spend);
      if (spend !== null) cell.spend = (cell.spend ?? 0) + spend;
      target.set(model, cell);
    }
  }
}

/** An empty AccountMonth to add answers into. */
export const emptyMonth = (): AccountMonth => ({ days: new Map(), keys: new Map() });

export class UsageDays {
  readonly #clock: () => number;
  readonly #maxCells: number;
  #month = '';
  #monthStart = 0;
  #monthEnd = 0;
  #day = 0;
  #dayStart = -Infinity;
  #accounts = new Map<string, MonthUsage>();
  #cells = 0;
  #dropped = 0;
  /** account → key → its use; keys past #maxKeys (all accounts together) are not followed. */
  readonly #keys = new Map<string, Map<string, KeyUse>>();
  #keyCount = 0;
  readonly #maxKeys: number;

  constructor(clock: () => number, options: { maxCells?: number; maxKeys?: number } = {}) {
    this.#clock = clock;
    this.#maxCells = options.maxCells ?? 200_000;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  get month(): string {
    this.#roll();
    return this.#month;
  }

  get dropped(): number {
    return this.#dropped;
  }

  record(entry: UsageRecord): void {
    const now = this.#clock();
    this.#roll(now);
    this.#recordKey(entry, now);
    const day = this.#dayOf(now);
    const models = this.#accounts.get(entry.account)?.get(day);
    // Requests that name no model (GET /v1/models, file uploads) are counted as such, not as "other".
    let name = entry.model ?? NO_MODEL;
    // A day keeps MODELS_PER_DAY - 1 models by name; the rest are added up as "other".
    const named = models ? models.size - (models.has(OTHER) ? 1 : 0) : 0;
    if (name !== OTHER && !models?.has(name) && named >= MODELS_PER_DAY - 1) name = OTHER;
    let cell = models?.get(name);
    if (!cell) {
      if (this.#cells >= this.#maxCells) {
        this.#dropped += 1;
        return;
      }
      this.#cells += 1;
      cell = { requests: 0, inputTokens: 0, outputTokens: 0 };
      let days = this.#accounts.get(entry.account);
      if (!days) this.#accounts.set(entry.account, (days = new Map()));
      let dayModels = days.get(day);
      if (!dayModels) days.set(day, (dayModels = new Map()));
      dayModels.set(name, cell);
    }
    cell.requests += 1;
    cell.inputTokens += entry.inputTokens;
    cell.outputTokens += entry.outputTokens;
    if (entry.spend !== undefined) cell.spend = (cell.spend ?? 0) + entry.spend;
  }

  #recordKey(entry: UsageRecord, now: number): void {
    let keys = this.#keys.get(entry.account);
    let use = keys?.get(entry.key);
    if (!use) {
      if (this.#keyCount >= this.#maxKeys) return;
      this.#keyCount += 1;
      if (!keys) this.#keys.set(entry.account, (keys = new Map()));
      keys.set(entry.key, (use = { lastUsed: now }));
    }
    use.lastUsed = now;
    if (entry.spend !== undefined) use.spend = (use.spend ?? 0) + entry.spend;
  }

  /** The account's month so far (an empty map when it has none). */
  accountMonth(account: string): MonthUsage {
    this.#roll();
    return this.#accounts.get(account) ?? new Map();
  }

  /** The account's keys that were used at this process: last use, and this month's spend when priced. */
  accountKeys(account: string): Map<string, KeyUse> {
    this.#roll();
    return this.#keys.get(account) ?? new Map();
  }

  /** The account's month as JSON (`GET /usage/days` on the metrics port): { month, days: { "3": { model: usage } }, keys: { name: use } }. */
  accountJson(account: string): AccountMonthJson {
    const money = <T extends { spend?: number }>(u: T) => {
      const { spend, ...rest } = u;
      return spend === undefined ? rest : { ...rest, spend: formatMoney(spend) };
    };
    const days: AccountMonthJson['days'] = {};
    for (const [day, models] of this.accountMonth(account)) days[day] = Object.fromEntries([...models].map(([model, usage]) => [model, money(usage)]));
    const keys: AccountMonthJson['keys'] = {};
    for (const [key, use] of this.accountKeys(account)) keys[key] = { ...money(use), lastUsed: new Date(use.lastUsed).toISOString() };
    return { month: this.month, days, keys };
  }

  /** Day of the month (UTC); a Date is made once a day, not once a request. */
  #dayOf(now: number): number {
    if (now < this.#dayStart || now >= this.#dayStart + DAY_MS) {
      const date = new Date(now);
      this.#day = date.getUTCDate();
      this.#dayStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
    }
    return this.#day;
  }

  /** A new month starts from nothing; the month's name is worked out once a month. */
  #roll(now = this.#clock()): void {
    if (now >= this.#monthStart && now < this.#monthEnd) return;
    const date = new Date(now);
    this.#monthStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
    this.#monthEnd = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
    const month = date.toISOString().slice(0, 7);
    if (month === this.#month) return;
    this.#month = month;
    this.#accounts = new Map();
    this.#cells = 0;
    // Last use outlives the month; spend starts again from nothing.
    for (const keys of this.#keys.values()) for (const use of keys.values()) delete use.spend;
  }
}
