// This month's usage per account, day and model, and when each key was last used, for the account
// area's chart and key list. Fed by the end of every authenticated exchange at this process; kept in
// memory, rolled over with the month, and bounded: models beyond a few per account and day are
// folded into "other", and past a total number of cells new ones are not added (counted as dropped).
// Per process by design, as the /usage ledger is (ADR 0012): see docs/console.md for Kubernetes.

export interface DayUsage {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Set only when the gateway prices requests (issue 33): money spent, in the prices' currency. */
  spend?: number;
}

export interface UsageRecord {
  account: string;
  key: string;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  spend?: number;
}

/** day of month (1–31) → model → usage */
export type MonthUsage = Map<number, Map<string, DayUsage>>;

const MODELS_PER_DAY = 12;
const DAY_MS = 24 * 3600 * 1000;
const OTHER = 'other';
const NO_MODEL = 'no model';

/** Adds one replica's answer (UsageDays.accountJson) into `into`; answers for another month are skipped. */
export function addMonth(into: MonthUsage, month: string, answer: unknown): void {
  const a = answer as { month?: unknown; days?: Record<string, Record<string, Partial<DayUsage>>> } | null;
  if (!a || a.month !== month || typeof a.days !== 'object' || a.days === null) return;
  for (const [dayText, models] of Object.entries(a.days)) {
    const day = Number(dayText);
    if (!Number.isInteger(day) || day < 1 || day > 31 || typeof models !== 'object' || models === null) continue;
    let target = into.get(day);
    if (!target) into.set(day, (target = new Map()));
    for (const [model, usage] of Object.entries(models).slice(0, 64)) {
      const cell = target.get(model) ?? { requests: 0, inputTokens: 0, outputTokens: 0 };
      cell.requests += Number(usage?.requests) || 0;
      cell.inputTokens += Number(usage?.inputTokens) || 0;
      cell.outputTokens += Number(usage?.outputTokens) || 0;
      if (typeof usage?.spend === 'number') cell.spend = (cell.spend ?? 0) + usage.spend;
      target.set(model, cell);
    }
  }
}

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
  readonly #lastUsed = new Map<string, number>();
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
    if (this.#lastUsed.has(entry.key) || this.#lastUsed.size < this.#maxKeys) this.#lastUsed.set(entry.key, now);
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
    if (typeof entry.spend === 'number' && Number.isFinite(entry.spend)) cell.spend = (cell.spend ?? 0) + entry.spend;
  }

  /** The account's month so far (an empty map when it has none). */
  accountMonth(account: string): MonthUsage {
    this.#roll();
    return this.#accounts.get(account) ?? new Map();
  }

  /** The account's month as JSON (`GET /usage/days` on the metrics port): { month, days: { "3": { model: usage } } }. */
  accountJson(account: string): { month: string; days: Record<string, Record<string, DayUsage>> } {
    const days: Record<string, Record<string, DayUsage>> = {};
    for (const [day, models] of this.accountMonth(account)) days[day] = Object.fromEntries(models);
    return { month: this.month, days };
  }

  lastUsed(key: string): number | null {
    return this.#lastUsed.get(key) ?? null;
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
  }
}
