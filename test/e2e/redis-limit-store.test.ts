// The shared limit store against a real redis-server: several store instances stand for several
// replicas, each with its own connection, hammering the same counters at once through the two calls
// a request makes (admit, settle).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Admission, AdmissionOutcome, Admitted, Settlement, TokenAsk } from '../../gateway/src/limits/limit-store.ts';
import { RedisLimitStore } from '../../gateway/src/limits/redis-limit-store.ts';
import { RedisUnavailableError, SharedRedis } from '../../gateway/src/storage/redis-client.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const log = pino({ level: 'silent' });
const PERIOD = '2026-11';
let redis: TestRedis;
const opened: Array<{ shared: SharedRedis; store: RedisLimitStore }> = [];

async function replica(options: { leaseMs?: number; callerClock?: boolean; prefix?: string } = {}) {
  const shared = new SharedRedis({ url: redis.url, log, prefix: options.prefix ?? `t${opened.length}-${Date.now()}:`, breakerCooldownMs: 50 });
  await shared.waitReady();
  const store = new RedisLimitStore(shared, { log, leaseMs: options.leaseMs, callerClock: options.callerClock });
  opened.push({ shared, store });
  return { shared, store };
}

/** Several replicas sharing one key prefix. */
async function replicas(n: number, options: { leaseMs?: number; callerClock?: boolean } = {}) {
  const prefix = `shared-${Math.random().toString(36).slice(2)}:`;
  return Promise.all(Array.from({ length: n }, () => replica({ ...options, prefix })));
}

function ask(parts: Partial<Admission>): Admission {
  return { account: 'acme', slots: [], requests: [], tokenWindows: [], budgets: [], period: PERIOD, tokens: null, ...parts };
}

/** A reservation of exactly `amount` tokens (all input, no output to fit). */
function tokens(amount: number, more: Partial<TokenAsk> = {}): TokenAsk {
  return { input: amount, output: 0, fit: false, minOutput: 0, choices: 1, ...more };
}

/** The settlement of `outcome` (an admission of `admission`) to `actual` tokens. */
function settlement(admission: Admission, outcome: AdmissionOutcome, actual: number): Settlement {
  const admitted = outcome as Admitted;
  return {
    account: admission.account,
    held: admitted.held,
    slots: admission.slots.map((s) => s.key),
    windows: admission.tokenWindows.map((w, i) => ({ key: w.key, ref: admitted.windows[i].ref })),
    budgets: admission.tokens ? admission.budgets.map((b) => b.key) : [],
    period: admission.period,
    reserved: admitted.amount,
    actual,
    uncounted: [],
  };
}

/** Settled usage plus open reservations of a budget, as Redis holds it. */
async function budgetUsed(shared: SharedRedis, key: string): Promise<number> {
  const [used, reserved] = await shared.client.hmget(shared.key('{acme}', 'b', PERIOD, key), 'used', 'reserved');
  return Number(used ?? 0) + Number(reserved ?? 0);
}

/** What a token window holds now (an admission that only reports it). */
async function windowUsed(store: RedisLimitStore, key: string, now = Date.now()): Promise<number> {
  const outcome = (await store.admit(ask({ tokenWindows: [{ key, limit: 1 }] }), now)) as Admitted;
  return outcome.windows[0].used;
}

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const { shared, store } of opened.splice(0)) {
    store.close();
    await shared.close();
  }
});
afterAll(async () => {
  await redis?.close();
});

describe('shared sliding window', () => {
  it('admits exactly the limit across replicas racing for it', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const admission = ask({ requests: [{ key: 'account:acme:rpm', limit: 30 }] });
    const outcomes = await Promise.all(Array.from({ length: 90 }, (_, i) => stores[i % 3].admit(admission, Date.now())));
    expect(outcomes.filter((o) => o.admitted)).toHaveLength(30);
    const refused = outcomes.find((o) => !o.admitted)!;
    expect(refused).toMatchObject({ admitted: false, refusal: { limit: 'requests', index: 0, used: 30 } });
    const { waitMs } = (refused as { refusal: { waitMs: number } }).refusal;
    expect(waitMs).toBeGreaterThan(59_000);
    expect(waitMs).toBeLessThanOrEqual(60_100);
  });

  it('keeps every amount for a whole window and not longer than one slot more', async () => {
    const [{ store }] = await replicas(1, { callerClock: true });
    const t0 = 1_000_000_000_000;
    const five = ask({ tokenWindows: [{ key: 'k', limit: 10 }], tokens: tokens(5) });
    expect((await store.admit(five, t0)).admitted).toBe(true);
    expect((await store.admit(five, t0 + 30_000)).admitted).toBe(true);
    const full = await store.admit(ask({ tokenWindows: [{ key: 'k', limit: 10 }], tokens: tokens(1) }), t0 + 59_999);
    expect(full).toEqual({ admitted: false, refusal: { limit: 'tokens', index: 0, used: 10, waitMs: 60_100 - 59_999, resetMs: 60_100 + 30_000 - 59_999, amount: 1 } });
    // The first amount leaves at slot + 601 slots; the second still counts.
    expect(await windowUsed(store, 'k', t0 + 60_100)).toBe(5);
    expect((await store.admit(five, t0 + 60_100)).admitted).toBe(true);
  });

  it('settles a reservation to the actual usage, charges usage that had none, and applies each settlement once', async () => {
    const [{ store }] = await replicas(1, { callerClock: true });
    const t0 = 2_000_000_000_000;
    const admission = ask({ tokenWindows: [{ key: 'tpm', limit: 5000 }], tokens: tokens(1000) });
    const outcome = await store.admit(admission, t0);
    await store.settle(settlement(admission, outcome, 300), t0 + 10);
    expect(await windowUsed(store, 'tpm', t0 + 20)).toBe(300);
    // The same settlement again (a retry after a lost reply) changes nothing.
    await store.settle(settlement(admission, outcome, 300), t0 + 30);
    expect(await windowUsed(store, 'tpm', t0 + 40)).toBe(300);
    // Usage of a request that reserved nothing (an image) is charged as it comes.
    const unreserved = ask({ tokenWindows: [{ key: 'tpm', limit: 5000 }], tokens: tokens(0) });
    const free = await store.admit(unreserved, t0 + 50);
    await store.settle(settlement(unreserved, free, 42), t0 + 60);
    expect(await windowUsed(store, 'tpm', t0 + 70)).toBe(342);
  });
});

describe('concurrency leases', () => {
  it('never holds more than max slots across replicas, and a settled request frees its slot', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const admission = ask({ slots: [{ key: 'account:acme:open', limit: 4 }] });
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3].admit(admission, Date.now())));
    expect(outcomes.filter((o) => o.admitted)).toHaveLength(4);
    expect(outcomes.find((o) => !o.admitted)).toEqual({ admitted: false, refusal: { limit: 'concurrency', index: 0, open: 4 } });
    const holder = outcomes.findIndex((o) => o.admitted);
    await stores[holder % 3].settle(settlement(admission, outcomes[holder], 0), Date.now());
    expect((await stores[(holder + 1) % 3].admit(admission, Date.now())).admitted).toBe(true);
  });

  it('renews the leases of a live replica and frees those of a dead one within the lease time', async () => {
    const [alive, dead] = await replicas(2, { leaseMs: 300 });
    const admission = ask({ slots: [{ key: 'open', limit: 2 }] });
    expect((await alive.store.admit(admission, Date.now())).admitted).toBe(true);
    expect((await dead.store.admit(admission, Date.now())).admitted).toBe(true);
    expect((await alive.store.admit(admission, Date.now())).admitted).toBe(false);
    // The dead replica stops renewing (its timer ends, as with SIGKILL); the live one keeps going.
    dead.store.close();
    const start = Date.now();
    await waitFor(async () => (await alive.store.admit(admission, Date.now())).admitted, 5000, "the dead replica's slot to come back");
    expect(Date.now() - start).toBeLessThan(2000);
    // The live replica's first slot survived several lease times through renewal.
    expect((await alive.store.admit(admission, Date.now())).admitted).toBe(false);
  });

  it('releases nothing for a request admitted while Redis was away', async () => {
    const [a, b] = await replicas(2);
    const admission = ask({ slots: [{ key: 'k', limit: 1 }] });
    const first = await a.store.admit(admission, Date.now());
    expect(first.admitted).toBe(true);
    // A second request was admitted by the failure policy (nothing held in Redis), and ends first.
    await a.store.settle({ ...settlement(admission, first, 0), held: { id: '' } }, Date.now());
    expect((await b.store.admit(admission, Date.now())).admitted).toBe(false);
    await a.store.settle(settlement(admission, first, 0), Date.now());
    expect((await b.store.admit(admission, Date.now())).admitted).toBe(true);
  });
});

describe('monthly budgets', () => {
  it('never passes the budget with many concurrent reservations over several replicas', async () => {
    const replicaSet = await replicas(3);
    const admission = ask({ budgets: [{ key: 'account:acme', limit: 10_000 }], tokens: tokens(300) });
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => replicaSet[i % 3].store.admit(admission, Date.now())));
    expect(outcomes.filter((o) => o.admitted)).toHaveLength(33);
    expect(outcomes.find((o) => !o.admitted)).toEqual({ admitted: false, refusal: { limit: 'monthly', index: 0, used: 9900, amount: 300 } });
    expect(await budgetUsed(replicaSet[0].shared, 'account:acme')).toBe(9900);
    // Settled to actual usage: the unused part of every reservation comes back.
    await Promise.all(outcomes.map((o, i) => (o.admitted ? replicaSet[i % 3].store.settle(settlement(admission, o, 100), Date.now()) : null)));
    expect(await budgetUsed(replicaSet[1].shared, 'account:acme')).toBe(3300);
  });

  it('fits a default output to the room left and caps the answer to it', async () => {
    const [{ store, shared }] = await replicas(1);
    const budget = [{ key: 'account:acme', limit: 1000 }];
    expect((await store.admit(ask({ budgets: budget, tokens: tokens(700) }), Date.now())).admitted).toBe(true);
    // 300 left: 100 of input leaves 200 for two answers, 100 each.
    const fitted = await store.admit(ask({ budgets: budget, tokens: { input: 100, output: 1024, fit: true, minOutput: 0, choices: 2 } }), Date.now());
    expect(fitted).toMatchObject({ admitted: true, amount: 300, cap: 100 });
    expect(await budgetUsed(shared, 'account:acme')).toBe(1000);
    // An explicit output limit is never shrunk: refused while the room is too small ...
    expect(await store.admit(ask({ budgets: budget, tokens: tokens(10) }), Date.now())).toMatchObject({ refusal: { limit: 'monthly', used: 1000 } });
    // ... and told it can never fit when it is larger than the budget itself.
    expect(await store.admit(ask({ budgets: budget, tokens: tokens(1001) }), Date.now())).toEqual({ admitted: false, refusal: { limit: 'too-large', budget: true, index: 0, amount: 1001 } });
  });

  it('lets the reservations of a dead replica expire instead of leaking', async () => {
    const [alive, dead] = await replicas(2, { leaseMs: 300 });
    const reserve = (amount: number) => ask({ budgets: [{ key: 'acct', limit: 1000 }], tokens: tokens(amount) });
    expect((await dead.store.admit(reserve(800), Date.now())).admitted).toBe(true);
    const held = await alive.store.admit(reserve(100), Date.now());
    expect(held.admitted).toBe(true);
    expect((await alive.store.admit(reserve(200), Date.now())).admitted).toBe(false);
    dead.store.close();
    await waitFor(async () => (await alive.store.admit(reserve(900), Date.now())).admitted, 5000, 'the dead reservation to expire');
    // The live reservation is renewed: still held three lease times later (100 + 900 of 1000).
    const until = Date.now() + 900;
    await waitFor(async () => {
      expect((await alive.store.admit(reserve(1), Date.now())).admitted).toBe(false);
      return Date.now() > until;
    }, 5000, 'three lease times');
    await alive.store.settle(settlement(reserve(100), held, 60), Date.now());
    expect(await budgetUsed(alive.shared, 'acct')).toBe(960);
  });
});

describe('when Redis goes away', () => {
  it('fails fast, keeps settlements, and applies them once after a restart', async () => {
    const [{ store, shared }] = await replicas(1, { leaseMs: 60_000 });
    const admission = ask({ budgets: [{ key: 'acct', limit: 1000 }], tokens: tokens(400) });
    const outcome = await store.admit(admission, Date.now());
    expect(outcome.admitted).toBe(true);
    await redis.stop();
    await waitFor(() => shared.degraded, 5000, 'the client to notice');
    const started = Date.now();
    await expect(store.admit(ask({ requests: [{ key: 'rpm', limit: 10 }] }), Date.now())).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(store.admit(admission, Date.now())).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(Date.now() - started).toBeLessThan(1000);
    // The settlement cannot reach Redis: it is kept, not lost and not thrown at the request.
    await store.settle(settlement(admission, outcome, 250), Date.now());
    expect(store.pendingSettlements).toBe(1);
    await redis.start();
    await waitFor(() => !shared.degraded && store.pendingSettlements === 0, 10_000, 'reconnection and the retry');
    // Redis lost its data (no persistence): the usage that happened is charged exactly once.
    expect(await budgetUsed(shared, 'acct')).toBe(250);
    await store.renewLeases();
    expect(await budgetUsed(shared, 'acct')).toBe(250);
  });
});

describe('one admission for every limit of a request', () => {
  it('admits exactly the limits across replicas, all or nothing', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const admission = ask({ slots: [{ key: 'acct:open', limit: 8 }, { key: 'key:open', limit: 100 }], requests: [{ key: 'acct:rpm', limit: 20 }, { key: 'key:rpm', limit: 5 }], tokenWindows: [{ key: 'acct:tpm', limit: 1000 }] });
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3].admit(admission, Date.now())));
    // The key's 5 requests per minute bind first; the 8 slots are never all taken.
    expect(outcomes.filter((o) => o.admitted)).toHaveLength(5);
    expect(outcomes.filter((o) => !o.admitted && o.refusal.limit === 'requests' && o.refusal.index === 1)).toHaveLength(25);
    // Refusals undid what they had taken: 5 slots held, 5 requests counted on the account.
    const probe = (await stores[0].admit(ask({ slots: [{ key: 'acct:open', limit: 8 }], requests: [{ key: 'acct:rpm', limit: 20 }] }), Date.now())) as Admitted;
    expect(probe.requests[0].used).toBe(6);
    const full = await stores[0].admit(ask({ slots: [{ key: 'acct:open', limit: 6 }] }), Date.now());
    expect(full).toEqual({ admitted: false, refusal: { limit: 'concurrency', index: 0, open: 6 } });
  });

  it('takes a slot, a request, a token window and a budget together, or none of them', async () => {
    const [{ store, shared }] = await replicas(1);
    const admission = (amount: number) =>
      ask({ slots: [{ key: 'open', limit: 10 }], requests: [{ key: 'rpm', limit: 100 }], tokenWindows: [{ key: 'tpm', limit: 10_000 }], budgets: [{ key: 'account:a', limit: 1000 }, { key: 'key:k', limit: 500 }], tokens: tokens(amount) });
    const first = await store.admit(admission(400), Date.now());
    expect(first).toMatchObject({ admitted: true, amount: 400, requests: [{ used: 1 }], windows: [{ used: 400 }] });
    // The key's budget refuses: the slot, the request and the window's tokens are all given back.
    expect(await store.admit(admission(200), Date.now())).toEqual({ admitted: false, refusal: { limit: 'monthly', index: 1, used: 400, amount: 200 } });
    const probe = (await store.admit(ask({ requests: [{ key: 'rpm', limit: 100 }], tokenWindows: [{ key: 'tpm', limit: 10_000 }], slots: [{ key: 'open', limit: 2 }] }), Date.now())) as Admitted;
    expect(probe).toMatchObject({ requests: [{ used: 2 }], windows: [{ used: 400 }] });
    expect(await store.admit(ask({ slots: [{ key: 'open', limit: 2 }] }), Date.now())).toMatchObject({ admitted: false });
    // Settled per budget, once, though one reservation id covers both.
    await store.settle(settlement(admission(400), first, 100), Date.now());
    expect(await budgetUsed(shared, 'account:a')).toBe(100);
    expect(await budgetUsed(shared, 'key:k')).toBe(100);
  });
});
