// The shared limit store: the LimitStore over Redis, so every replica sees and changes the same
// counters and a limit holds across all of them together. A request costs one script call to be
// admitted (ADMIT: the only round trip before its answer) and one to be settled (SETTLE), which goes
// out in the same write as its usage count (ioredis pipelines the calls of one tick).
//
// Concurrency slots and budget reservations are leases: each carries an expiry that this process
// renews while it holds them. A replica that dies (SIGKILL, OOM, a lost node) stops renewing, and its
// slots and reservations come back on their own within one lease time instead of leaking.
//
// A settlement is idempotent (one id per admission, a marker in Redis): when Redis is unreachable it
// is kept and retried after reconnection, and a retry whose first attempt did arrive is ignored, so
// nothing is charged twice. Admission errors are thrown as RedisUnavailableError; what a refusal to
// answer means for a request (fail open or closed) is decided by FailSafeLimitStore, not here.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { MARKER_MS, type SharedRedis } from '../storage/redis-client.ts';
import { RedisRetryQueue } from '../storage/redis-retry-queue.ts';
import type { Admission, AdmissionOutcome, LimitStore, Refusal, Settlement, WindowState } from './limit-store.ts';
import { ADMIT, RENEW, SETTLE } from './redis-scripts.ts';
import { SLOT_MS, WINDOW_MS } from './sliding-window.ts';

const SLOTS_PER_WINDOW = WINDOW_MS / SLOT_MS;
/** A month's budget keys outlive the month by a month, so a late settlement still finds them. */
const BUDGET_KEEP_MS = 62 * 24 * 3600 * 1000;
const RENEW_BATCH = 500;

export const DEFAULT_LEASE_MS = 15_000;

export interface RedisLimitStoreOptions {
  log: Logger;
  /** Lifetime of a concurrency slot or reservation that is not renewed. */
  leaseMs?: number;
  /**
   * Use the caller's `now` instead of Redis's clock (tests that move time). In production the
   * Redis clock is the one all replicas share.
   */
  callerClock?: boolean;
}

type Script = (...args: Array<string | number>) => Promise<unknown>;

/** A settlement as sent: the script's keys and arguments, ready to be re-sent as they are. */
interface PendingSettlement {
  keys: string[];
  args: Array<string | number>;
}

/** What one admission holds in Redis, renewed until settled. */
interface Lease {
  account: string;
  /** The sorted sets its id is in: slot sets, budget reservation sets. */
  zsets: string[];
}

export class RedisLimitStore implements LimitStore {
  readonly leaseMs: number;
  readonly #redis: SharedRedis;
  readonly #log: Logger;
  readonly #callerClock: boolean;
  readonly #admit: Script;
  readonly #settle: Script;
  readonly #renew: Script;
  /** This process's open leases by admission id. */
  readonly #leases = new Map<string, Lease>();
  readonly #settlements: RedisRetryQueue<PendingSettlement>;
  #sequence = 0;
  #renewer: NodeJS.Timeout;
  #renewing = false;

  constructor(redis: SharedRedis, options: RedisLimitStoreOptions) {
    this.#redis = redis;
    this.#log = options.log;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#callerClock = options.callerClock ?? false;
    const define = (name: string, lua: string): Script => {
      redis.client.defineCommand(name, { lua });
      return (...args) => redis.run((client: Redis) => (client as unknown as Record<string, Script>)[name](...args));
    };
    this.#admit = define('tollgateAdmit', ADMIT);
    this.#settle = define('tollgateSettle', SETTLE);
    this.#renew = define('tollgateRenew', RENEW);
    // Renewed three times per lease: one missed renewal (a slow event loop, a blip) loses nothing.
    this.#renewer = setInterval(() => void this.renewLeases(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.#renewer.unref();
    this.#settlements = new RedisRetryQueue('limit settlement', (s) => this.#settle(s.keys.length, ...s.keys, ...s.args), this.#log);
    redis.onHealthChange((health) => {
      if (!health.degraded) void this.#settlements.flush();
    });
  }

  async admit(admission: Admission, now: number): Promise<AdmissionOutcome> {
    const { account, slots, requests, tokenWindows, tokens, period } = admission;
    const spend = admission.spend ?? null;
    const budgets = tokens ? admission.budgets : [];
    const spendBudgets = spend ? (admission.spendBudgets ?? []) : [];
    const id = this.#newId();
    const budgetKeys = budgets.map((b) => this.#budgetKeys(account, b.key, period));
    const spendKeys = spendBudgets.map((b) => this.#budgetKeys(account, b.key, period));
    const keys = [
      ...slots.map((s) => this.#slotKey(account, s.key)),
      ...requests.flatMap((r) => this.#windowKeys(account, r.key)),
      ...tokenWindows.flatMap((w) => this.#windowKeys(account, w.key)),
      ...budgetKeys.flat(),
      ...spendKeys.flat(),
    ];
    const args: Array<string | number> = [slots.length, requests.length, tokenWindows.length, budgets.length, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW, this.leaseMs, BUDGET_KEEP_MS, id];
    if (tokens) args.push(1, tokens.input, tokens.output, tokens.fit ? 1 : 0, tokens.minOutput, tokens.choices);
    else args.push(0, 0, 0, 0, 0, 1);
    if (spend) args.push(spendBudgets.length, 1, spend.fixed, spend.outputPerMillion, spend.floor);
    else args.push(0, 0, 0, 0, 0);
    for (const list of [slots, requests, tokenWindows, budgets, spendBudgets]) for (const bound of list) args.push(bound.limit);
    const reply = (await this.#admit(keys.length, ...keys, ...args)) as number[];
    if (reply[0] !== 0) return { admitted: false, refusal: refusalOf(reply) };
    const amount = reply[1];
    const spent = reply[3];
    const zsets = [...keys.slice(0, slots.length), ...(amount > 0 ? budgetKeys.map(([, zset]) => zset) : []), ...(spent > 0 ? spendKeys.map(([, zset]) => zset) : [])];
    if (zsets.length > 0) this.#leases.set(id, { account, zsets });
    const states: WindowState[] = [];
    for (let at = 4; at < reply.length; at += 3) states.push({ ref: reply[at], used: reply[at + 1], resetMs: reply[at + 2] });
    return { admitted: true, held: { id }, requests: states.slice(0, requests.length), windows: states.slice(requests.length), amount, cap: reply[2] < 0 ? null : reply[2], spend: spent };
  }

  /** Never throws: a settlement that cannot reach Redis now is retried after reconnection. */
  async settle(settlement: Settlement, now: number): Promise<void> {
    const { account, held, period } = settlement;
    const spendBudgets = settlement.spendBudgets ?? [];
    // Admitted while Redis was away (the failure policy): nothing of it is in Redis to give back.
    const inRedis = held !== null && held.id !== '';
    if (inRedis) this.#leases.delete(held.id);
    const slots = inRedis ? settlement.slots : [];
    if (slots.length + settlement.windows.length + settlement.budgets.length + spendBudgets.length + settlement.uncounted.length === 0) return;
    const id = inRedis ? held.id : this.#newId();
    const keys = [
      this.#redis.key(tag(account), 'settled', id),
      ...slots.map((key) => this.#slotKey(account, key)),
      ...settlement.windows.flatMap((w) => this.#windowKeys(account, w.key)),
      ...settlement.budgets.flatMap((key) => this.#budgetKeys(account, key, period)),
      ...spendBudgets.flatMap((key) => this.#budgetKeys(account, key, period)),
      ...settlement.uncounted.flatMap((r) => this.#windowKeys(account, r.key)),
    ];
    const args: Array<string | number> = [slots.length, settlement.windows.length, settlement.budgets.length, settlement.uncounted.length, id, inRedis ? 1 : 0, settlement.reserved, settlement.actual];
    args.push(this.#now(now), SLOT_MS, SLOTS_PER_WINDOW, BUDGET_KEEP_MS, MARKER_MS, spendBudgets.length, settlement.spendReserved ?? 0, settlement.spendActual ?? 0, ...settlement.windows.map((w) => w.ref), ...settlement.uncounted.map((r) => r.limit));
    await this.#settlements.submit({ keys, args });
  }

  /** Settlements waiting for Redis to come back. */
  get pendingSettlements(): number {
    return this.#settlements.size;
  }

  /** Re-sends kept settlements now (reconnection, shutdown). */
  flushPending(): Promise<void> {
    return this.#settlements.flush();
  }

  /** Extends every lease and reservation this process holds (on a timer; exposed for tests). */
  async renewLeases(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    try {
      // One call per account: a script's keys must share the account's cluster slot.
      const byAccount = new Map<string, { zsets: string[]; ids: string[] }>();
      for (const [id, lease] of this.#leases) {
        let group = byAccount.get(lease.account);
        if (!group) byAccount.set(lease.account, (group = { zsets: [], ids: [] }));
        for (const zset of lease.zsets) group.zsets.push(zset), group.ids.push(id);
      }
      const calls: Array<Promise<unknown>> = [];
      for (const { zsets, ids } of byAccount.values()) {
        for (let i = 0; i < ids.length; i += RENEW_BATCH) {
          const keys = zsets.slice(i, i + RENEW_BATCH);
          calls.push(this.#renew(keys.length, ...keys, this.leaseMs, '', ...ids.slice(i, i + RENEW_BATCH)));
        }
      }
      await Promise.all(calls);
      if (this.#settlements.size > 0) await this.#settlements.flush();
    } catch (error) {
      this.#log.debug({ err: error }, 'lease renewal failed; retried on the next tick');
    } finally {
      this.#renewing = false;
    }
  }

  close(): void {
    clearInterval(this.#renewer);
  }

  #slotKey(account: string, key: string): string {
    return this.#redis.key(tag(account), 'c', key);
  }

  #windowKeys(account: string, key: string): [string, string] {
    return [this.#redis.key(tag(account), 'w', key), this.#redis.key(tag(account), 'wz', key)];
  }

  #budgetKeys(account: string, key: string, period: string): [string, string] {
    return [this.#redis.key(tag(account), 'b', period, key), this.#redis.key(tag(account), 'br', period, key)];
  }

  #now(now: number): number | '' {
    return this.#callerClock ? now : '';
  }

  #newId(): string {
    return `${this.#redis.replicaId}:${(this.#sequence++).toString(36)}`;
  }
}

/** The account's hash tag: every key of one script call lands in the same cluster slot. */
function tag(account: string): string {
  return `{${account}}`;
}

function refusalOf(reply: number[]): Refusal {
  const index = reply[1] - 1;
  switch (reply[0]) {
    case 1:
      return { limit: 'concurrency', index, open: reply[2] };
    case 2:
      return { limit: 'requests', index, used: reply[2], waitMs: reply[3], resetMs: reply[4] };
    case 3:
      return { limit: 'too-large', index, amount: reply[2], budget: reply[3] === 1 };
    case 4:
      return { limit: 'tokens', index, used: reply[2], waitMs: reply[3], resetMs: reply[4], amount: reply[5] };
    case 6:
      return { limit: 'spend', index, used: reply[2], amount: reply[3] };
    default:
      return { limit: 'monthly', index, used: reply[2], amount: reply[3] };
  }
}
