// The shared limit store: the LimitStore interface over Redis, one atomic script per call, so every
// replica sees and changes the same counters and a limit holds across all of them together.
//
// Concurrency slots and budget reservations are leases: each carries an expiry that this process
// renews while it holds them. A replica that dies (SIGKILL, OOM, a lost node) stops renewing, and its
// slots and reservations come back on their own within one lease time instead of leaking.
//
// A settlement is idempotent (one id per reservation, a marker in Redis): when Redis is unreachable
// it is kept and retried after reconnection, and a retry whose first attempt did arrive is ignored,
// so nothing is charged twice. Errors are thrown as RedisUnavailableError; what a refusal to answer
// means for a request (fail open or closed) is decided by FailSafeLimitStore, not here.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { MARKER_MS, type SharedRedis } from '../storage/redis-client.ts';
import { RedisRetryQueue } from '../storage/redis-retry-queue.ts';
import type { BudgetGrant, WindowGrant } from './limit-store.ts';
import type { AdmissionBatch, AdmissionOutcome, BatchLimitStore, ReservationBatch, ReservationOutcome, WindowState } from './batch.ts';
import { ADMIT, RESERVE, BUDGET_RESERVE, BUDGET_SETTLE, BUDGET_USED, LEASE_ACQUIRE, LEASE_RELEASE, RENEW, WINDOW_ADD, WINDOW_ADJUST, WINDOW_PEEK } from './redis-scripts.ts';
import { SLOT_MS, WINDOW_MS, type SlotRef } from './sliding-window.ts';

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

interface Reservation {
  id: string;
  amount: number;
  zset: string;
}

interface PendingSettlement {
  key: string;
  period: string;
  id: string;
  actual: number;
}

export class RedisLimitStore implements BatchLimitStore {
  readonly leaseMs: number;
  readonly #redis: SharedRedis;
  readonly #log: Logger;
  readonly #callerClock: boolean;
  readonly #scripts: Record<'admit' | 'reserve' | 'windowAdd' | 'windowAdjust' | 'windowPeek' | 'leaseAcquire' | 'leaseRelease' | 'renew' | 'budgetReserve' | 'budgetSettle' | 'budgetUsed', Script>;
  /** This process's open concurrency leases per store key (any one of them may be released). */
  #leases = new Map<string, string[]>();
  /** This process's open budget reservations per period and key. */
  #reservations = new Map<string, Reservation[]>();
  readonly #settlements: RedisRetryQueue<PendingSettlement>;
  #sequence = 0;
  #renewer: NodeJS.Timeout;
  #renewing = false;

  constructor(redis: SharedRedis, options: RedisLimitStoreOptions) {
    this.#redis = redis;
    this.#log = options.log;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#callerClock = options.callerClock ?? false;
    const define = (name: string, lua: string, keys?: number): Script => {
      redis.client.defineCommand(name, keys === undefined ? { lua } : { lua, numberOfKeys: keys });
      return (...args) => redis.run((client: Redis) => (client as unknown as Record<string, Script>)[name](...args));
    };
    this.#scripts = {
      admit: define('tollgateAdmit', ADMIT),
      reserve: define('tollgateReserve', RESERVE),
      windowAdd: define('tollgateWindowAdd', WINDOW_ADD, 2),
      windowAdjust: define('tollgateWindowAdjust', WINDOW_ADJUST, 2),
      windowPeek: define('tollgateWindowPeek', WINDOW_PEEK, 2),
      leaseAcquire: define('tollgateLeaseAcquire', LEASE_ACQUIRE, 1),
      leaseRelease: define('tollgateLeaseRelease', LEASE_RELEASE, 1),
      renew: define('tollgateRenew', RENEW),
      budgetReserve: define('tollgateBudgetReserve', BUDGET_RESERVE, 2),
      budgetSettle: define('tollgateBudgetSettle', BUDGET_SETTLE, 3),
      budgetUsed: define('tollgateBudgetUsed', BUDGET_USED, 2),
    };
    // Renewed three times per lease: one missed renewal (a slow event loop, a blip) loses nothing.
    this.#renewer = setInterval(() => void this.renewLeases(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.#renewer.unref();
    this.#settlements = new RedisRetryQueue('budget settlement', (s) => this.#settle(s), this.#log);
    redis.onHealthChange((health) => {
      if (!health.degraded) void this.#settlements.flush();
    });
  }

  async admitBatch(batch: AdmissionBatch, now: number): Promise<AdmissionOutcome> {
    const id = this.#newId();
    const keys = [...batch.slots.map((s) => this.#redis.key('c', s.key)), ...batch.requests.flatMap((r) => this.#windowKeys(r.key)), ...batch.peeks.flatMap((key) => this.#windowKeys(key))];
    const args = [batch.slots.length, batch.requests.length, batch.peeks.length, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW, this.leaseMs, id, ...batch.slots.map((s) => s.max), ...batch.requests.map((r) => r.limit)];
    const reply = (await this.#scripts.admit(keys.length, ...keys, ...args)) as number[];
    if (reply[0] === 1) return { admitted: false, slot: { index: reply[1] - 1, open: reply[2] } };
    if (reply[0] === 2) return { admitted: false, request: { index: reply[1] - 1, used: reply[2], waitMs: reply[3], resetMs: reply[4] } };
    for (const slot of batch.slots) this.#holdLease(slot.key, id);
    const requests: WindowState[] = [];
    let at = 1;
    for (let i = 0; i < batch.requests.length; i++, at += 3) requests.push({ ref: reply[at], used: reply[at + 1], resetMs: reply[at + 2] });
    const peeks: Array<{ used: number; resetMs: number }> = [];
    for (let i = 0; i < batch.peeks.length; i++, at += 2) peeks.push({ used: reply[at], resetMs: reply[at + 1] });
    return { admitted: true, requests, peeks };
  }

  async reserveBatch(batch: ReservationBatch, now: number): Promise<ReservationOutcome> {
    const id = this.#newId();
    const budgetKeys = batch.budgets.map((b) => this.#budgetKeys(b.key, batch.period));
    const keys = [...batch.windows.flatMap((w) => this.#windowKeys(w.key)), ...budgetKeys.flat()];
    const args = [batch.windows.length, batch.budgets.length, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW, this.leaseMs, BUDGET_KEEP_MS, id, batch.amount, ...batch.windows.map((w) => w.limit), ...batch.budgets.map((b) => b.limit)];
    const reply = (await this.#scripts.reserve(keys.length, ...keys, ...args)) as number[];
    if (reply[0] === 1) return { granted: false, window: { index: reply[1] - 1, used: reply[2], waitMs: reply[3], resetMs: reply[4] } };
    if (reply[0] === 2) return { granted: false, budget: { index: reply[1] - 1, used: reply[2] } };
    if (batch.amount > 0) batch.budgets.forEach((b, i) => this.#holdReservation(b.key, batch.period, { id, amount: batch.amount, zset: budgetKeys[i][1] }));
    const windows: WindowState[] = [];
    for (let i = 0, at = 1; i < batch.windows.length; i++, at += 3) windows.push({ ref: reply[at], used: reply[at + 1], resetMs: reply[at + 2] });
    return { granted: true, windows };
  }

  async tryAdd(key: string, amount: number, limit: number, now: number): Promise<WindowGrant> {
    const [granted, ref, used, waitMs, resetMs] = (await this.#scripts.windowAdd(...this.#windowKeys(key), amount, limit, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW)) as number[];
    return { granted: granted === 1, ref, used, waitMs, resetMs };
  }

  async adjust(key: string, ref: SlotRef, delta: number, now: number): Promise<void> {
    // A reference of a grant made while Redis was away: nothing was recorded, nothing to correct.
    if (ref < 0 || delta === 0) return;
    await this.#scripts.windowAdjust(...this.#windowKeys(key), ref, delta, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW);
  }

  async record(key: string, amount: number, now: number): Promise<void> {
    if (amount > 0) await this.#scripts.windowAdd(...this.#windowKeys(key), amount, -1, this.#now(now), SLOT_MS, SLOTS_PER_WINDOW);
  }

  async peek(key: string, now: number): Promise<{ used: number; resetMs: number }> {
    const [used, resetMs] = (await this.#scripts.windowPeek(...this.#windowKeys(key), this.#now(now), SLOT_MS, SLOTS_PER_WINDOW)) as number[];
    return { used, resetMs };
  }

  async acquire(key: string, max: number): Promise<{ granted: boolean; open: number }> {
    const id = this.#newId();
    const [granted, open] = (await this.#scripts.leaseAcquire(this.#redis.key('c', key), max, id, this.leaseMs, '')) as number[];
    if (granted === 1) this.#holdLease(key, id);
    return { granted: granted === 1, open };
  }

  /**
   * Slots granted by the failure policy while Redis was away hold no lease; a placeholder per slot
   * makes their release a no-op instead of dropping another request's lease on the same key.
   */
  holdWithoutStore(keys: readonly string[]): void {
    for (const key of keys) this.#holdLease(key, '');
  }

  async release(key: string): Promise<void> {
    const ids = this.#leases.get(key);
    const id = ids?.pop();
    if (id === undefined) return;
    if (ids!.length === 0) this.#leases.delete(key);
    if (id === '') return; // granted while Redis was away: nothing was taken
    // If this fails the lease simply expires: released at the latest one lease time later.
    await this.#scripts.leaseRelease(this.#redis.key('c', key), id);
  }

  async reserveBudget(key: string, period: string, amount: number, limit: number): Promise<BudgetGrant> {
    const id = this.#newId();
    const [hash, zset] = this.#budgetKeys(key, period);
    const [granted, used] = (await this.#scripts.budgetReserve(hash, zset, amount, limit, id, this.leaseMs, '', BUDGET_KEEP_MS)) as number[];
    if (granted === 1 && amount > 0) this.#holdReservation(key, period, { id, amount, zset });
    return { granted: granted === 1, used };
  }

  /** Never throws: a settlement that cannot reach Redis now is retried after reconnection. */
  async settleBudget(key: string, period: string, reserved: number, actual: number): Promise<void> {
    let id: string | undefined;
    if (reserved > 0) {
      const local = `${period}\u0000${key}`;
      const list = this.#reservations.get(local);
      const index = list ? list.findIndex((r) => r.amount === reserved) : -1;
      if (index >= 0) {
        id = list![index].id;
        list!.splice(index, 1);
        if (list!.length === 0) this.#reservations.delete(local);
      }
    }
    // No reservation here (usage priced afterwards, or one made while Redis was away): charge only.
    if (id === undefined && actual <= 0) return;
    await this.#settlements.submit({ key, period, id: id ?? this.#newId(), actual });
  }

  async budgetUsed(key: string, period: string): Promise<number> {
    return (await this.#scripts.budgetUsed(...this.#budgetKeys(key, period), '')) as number;
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
      const zsets: string[] = [];
      const ids: string[] = [];
      for (const [key, list] of this.#leases) for (const id of list) if (id !== '') zsets.push(this.#redis.key('c', key)), ids.push(id);
      for (const list of this.#reservations.values()) for (const r of list) zsets.push(r.zset), ids.push(r.id);
      for (let i = 0; i < ids.length; i += RENEW_BATCH) {
        const keys = zsets.slice(i, i + RENEW_BATCH);
        await this.#scripts.renew(keys.length, ...keys, this.leaseMs, '', ...ids.slice(i, i + RENEW_BATCH));
      }
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

  #settle(s: PendingSettlement): Promise<unknown> {
    const [hash, zset] = this.#budgetKeys(s.key, s.period);
    // One reservation id may cover several budgets (account and key): the marker is per budget.
    return this.#scripts.budgetSettle(hash, zset, this.#redis.key('settled', s.period, s.key, s.id), s.id, s.actual, BUDGET_KEEP_MS, MARKER_MS);
  }

  #holdLease(key: string, id: string): void {
    const ids = this.#leases.get(key);
    if (ids) ids.push(id);
    else this.#leases.set(key, [id]);
  }

  #holdReservation(key: string, period: string, reservation: Reservation): void {
    const local = `${period}\u0000${key}`;
    const list = this.#reservations.get(local);
    if (list) list.push(reservation);
    else this.#reservations.set(local, [reservation]);
  }

  #windowKeys(key: string): [string, string] {
    return [this.#redis.key('w', key), this.#redis.key('wz', key)];
  }

  #budgetKeys(key: string, period: string): [string, string] {
    return [this.#redis.key('b', period, key), this.#redis.key('br', period, key)];
  }

  #now(now: number): number | '' {
    return this.#callerClock ? now : '';
  }

  #newId(): string {
    return `${this.#redis.replicaId}:${(this.#sequence++).toString(36)}`;
  }
}
