// The shared limit store against a real redis-server: several store instances stand for several
// replicas, each with its own connection, hammering the same counters at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { RedisLimitStore } from '../../gateway/src/limits/redis-limit-store.ts';
import { RedisUnavailableError, SharedRedis } from '../../gateway/src/storage/redis-client.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const log = pino({ level: 'silent' });
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
    const attempts = Array.from({ length: 90 }, (_, i) => stores[i % 3].tryAdd('account:acme:rpm', 1, 30, Date.now()));
    const grants = await Promise.all(attempts);
    expect(grants.filter((g) => g.granted)).toHaveLength(30);
    const refused = grants.find((g) => !g.granted)!;
    expect(refused.used).toBe(30);
    expect(refused.waitMs).toBeGreaterThan(59_000);
    expect(refused.waitMs).toBeLessThanOrEqual(60_100);
  });

  it('keeps every amount for a whole window and not longer than one slot more', async () => {
    const [{ store }] = await replicas(1, { callerClock: true });
    const t0 = 1_000_000_000_000;
    expect((await store.tryAdd('k', 5, 10, t0)).granted).toBe(true);
    expect((await store.tryAdd('k', 5, 10, t0 + 30_000)).granted).toBe(true);
    const full = await store.tryAdd('k', 1, 10, t0 + 59_999);
    expect(full).toMatchObject({ granted: false, used: 10 });
    expect(full.waitMs).toBe(60_100 - 59_999);
    // The first amount leaves at slot + 601 slots; the second still counts.
    expect((await store.peek('k', t0 + 60_100)).used).toBe(5);
    expect((await store.tryAdd('k', 5, 10, t0 + 60_100)).granted).toBe(true);
  });

  it('settles an amount up or down through its reference, never below zero', async () => {
    const [{ store }] = await replicas(1, { callerClock: true });
    const t0 = 2_000_000_000_000;
    const grant = await store.tryAdd('tpm', 1000, 5000, t0);
    await store.adjust('tpm', grant.ref, -700, t0 + 10);
    expect((await store.peek('tpm', t0 + 20)).used).toBe(300);
    await store.adjust('tpm', grant.ref, -10_000, t0 + 30);
    expect((await store.peek('tpm', t0 + 40)).used).toBe(0);
    await store.record('tpm', 42, t0 + 50);
    expect((await store.peek('tpm', t0 + 60)).used).toBe(42);
  });
});

describe('concurrency leases', () => {
  it('never holds more than max slots across replicas, and a released slot is free again', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const grants = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3].acquire('account:acme:open', 4)));
    expect(grants.filter((g) => g.granted)).toHaveLength(4);
    const holder = stores.findIndex((_, i) => grants.some((g, j) => g.granted && j % 3 === i));
    await stores[holder].release('account:acme:open');
    expect((await stores[(holder + 1) % 3].acquire('account:acme:open', 4)).granted).toBe(true);
  });

  it('renews the leases of a live replica and frees those of a dead one within the lease time', async () => {
    const [alive, dead] = await replicas(2, { leaseMs: 300 });
    expect((await alive.store.acquire('open', 2)).granted).toBe(true);
    expect((await dead.store.acquire('open', 2)).granted).toBe(true);
    expect((await alive.store.acquire('open', 2)).granted).toBe(false);
    // The dead replica stops renewing (its timer ends, as with SIGKILL); the live one keeps going.
    dead.store.close();
    const start = Date.now();
    await waitFor(async () => {
      const grant = await alive.store.acquire('open', 2);
      return grant.granted;
    }, 5000, 'the dead replica\'s slot to come back');
    expect(Date.now() - start).toBeLessThan(2000);
    // The live replica's first slot survived several lease times through renewal.
    expect((await alive.store.acquire('open', 2)).granted).toBe(false);
  });
});

describe('slots granted while Redis was away', () => {
  it('release nothing of the slots Redis holds', async () => {
    const [a, b] = await replicas(2);
    expect((await a.store.acquire('k', 1)).granted).toBe(true);
    // A second request on the same key was admitted by the failure policy (no lease), and ends first.
    a.store.holdWithoutStore(['k']);
    await a.store.release('k');
    // The first request's lease is still in Redis: the slot is taken for every replica.
    expect((await b.store.acquire('k', 1)).granted).toBe(false);
    await a.store.release('k');
    expect((await b.store.acquire('k', 1)).granted).toBe(true);
  });
});

describe('monthly budgets', () => {
  it('never passes the budget with many concurrent reservations over several replicas', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const grants = await Promise.all(Array.from({ length: 50 }, (_, i) => stores[i % 3].reserveBudget('account:acme', '2026-11', 300, 10_000)));
    const granted = grants.filter((g) => g.granted).length;
    expect(granted).toBe(33);
    expect(await stores[0].budgetUsed('account:acme', '2026-11')).toBe(9900);
    // Settled to actual usage: the unused part of every reservation comes back.
    await Promise.all(grants.map((g, i) => (g.granted ? stores[i % 3].settleBudget('account:acme', '2026-11', 300, 100) : null)));
    expect(await stores[1].budgetUsed('account:acme', '2026-11')).toBe(3300);
  });

  it('lets the reservations of a dead replica expire instead of leaking', async () => {
    const [alive, dead] = await replicas(2, { leaseMs: 300 });
    expect((await dead.store.reserveBudget('acct', '2026-11', 800, 1000)).granted).toBe(true);
    expect((await alive.store.reserveBudget('acct', '2026-11', 100, 1000)).granted).toBe(true);
    expect((await alive.store.reserveBudget('acct', '2026-11', 200, 1000)).granted).toBe(false);
    dead.store.close();
    await waitFor(async () => (await alive.store.budgetUsed('acct', '2026-11')) === 100, 5000, 'the dead reservation to expire');
    // The live reservation is renewed: still held three lease times later.
    const until = Date.now() + 900;
    await waitFor(async () => {
      expect(await alive.store.budgetUsed('acct', '2026-11')).toBe(100);
      return Date.now() > until;
    }, 5000, 'three lease times');
    // The live reservation was renewed all along and settles normally.
    await alive.store.settleBudget('acct', '2026-11', 100, 60);
    expect(await alive.store.budgetUsed('acct', '2026-11')).toBe(60);
  });

  it('charges a settlement once even when it is retried', async () => {
    const [{ store, shared }] = await replicas(1);
    expect((await store.reserveBudget('acct', '2026-11', 500, 1000)).granted).toBe(true);
    // The same settlement id twice (a retry after a lost reply) is applied once.
    const hash = shared.key('b', '2026-11', 'acct');
    const reservation = (await shared.client.hkeys(hash)).find((f) => f.startsWith('r:'))!.slice(2);
    await store.settleBudget('acct', '2026-11', 500, 120);
    const { BUDGET_SETTLE } = await import('../../gateway/src/limits/redis-scripts.ts');
    const again = await shared.client.eval(BUDGET_SETTLE, 3, hash, shared.key('br', '2026-11', 'acct'), shared.key('settled', '2026-11', 'acct', reservation), reservation, 120, 1_000_000, 1_000_000);
    expect(again).toBe(0);
    expect(await store.budgetUsed('acct', '2026-11')).toBe(120);
  });
});

describe('when Redis goes away', () => {
  it('fails fast, keeps settlements, and applies them once after a restart', async () => {
    const [{ store, shared }] = await replicas(1, { leaseMs: 60_000 });
    expect((await store.reserveBudget('acct', '2026-11', 400, 1000)).granted).toBe(true);
    await redis.stop();
    await waitFor(() => shared.degraded, 5000, 'the client to notice');
    const started = Date.now();
    await expect(store.tryAdd('rpm', 1, 10, Date.now())).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(store.reserveBudget('acct', '2026-11', 1, 1000)).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(Date.now() - started).toBeLessThan(1000);
    // The settlement cannot reach Redis: it is kept, not lost and not thrown at the request.
    await store.settleBudget('acct', '2026-11', 400, 250);
    expect(store.pendingSettlements).toBe(1);
    await redis.start();
    await waitFor(() => !shared.degraded && store.pendingSettlements === 0, 10_000, 'reconnection and the retry');
    // Redis lost its data (no persistence): the usage that happened is charged exactly once.
    expect(await store.budgetUsed('acct', '2026-11')).toBe(250);
    await store.renewLeases();
    expect(await store.budgetUsed('acct', '2026-11')).toBe(250);
  });
});

describe('batched admission and reservation (one round trip each)', () => {
  it('admits exactly the limits across replicas, all or nothing', async () => {
    const stores = (await replicas(3)).map((r) => r.store);
    const batch = { slots: [{ key: 'acct:open', max: 8 }, { key: 'key:open', max: 100 }], requests: [{ key: 'acct:rpm', limit: 20 }, { key: 'key:rpm', limit: 5 }], peeks: ['acct:tpm'] };
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3].admitBatch(batch, Date.now())));
    const admitted = outcomes.filter((o) => o.admitted);
    // The key's 5 requests per minute bind first; the 8 slots are never all taken.
    expect(admitted).toHaveLength(5);
    expect(outcomes.filter((o) => !o.admitted && 'request' in o && o.request.index === 1)).toHaveLength(25);
    // Refusals undid what they had taken: 5 slots held, 5 requests counted on the account.
    expect(await stores[0].peek('acct:rpm', Date.now())).toMatchObject({ used: 5 });
    const open = await stores[0].acquire('acct:open', 8);
    expect(open).toEqual({ granted: true, open: 6 });
  });

  it('refuses on a full slot set and releases the slots it took before', async () => {
    const [{ store }] = await replicas(1);
    expect((await store.acquire('b', 1)).granted).toBe(true);
    const outcome = await store.admitBatch({ slots: [{ key: 'a', max: 1 }, { key: 'b', max: 1 }], requests: [{ key: 'rpm', limit: 10 }], peeks: [] }, Date.now());
    expect(outcome).toEqual({ admitted: false, slot: { index: 1, open: 1 } });
    expect((await store.acquire('a', 1)).granted).toBe(true);
    expect((await store.peek('rpm', Date.now())).used).toBe(0);
  });

  it('reserves tokens in every window and budget or in none', async () => {
    const [{ store }] = await replicas(1);
    const batch = (amount: number) => ({ amount, windows: [{ key: 'tpm', limit: 10_000 }], budgets: [{ key: 'account:a', limit: 1000 }, { key: 'key:k', limit: 500 }], period: '2026-11' });
    const first = await store.reserveBatch(batch(400), Date.now());
    expect(first).toMatchObject({ granted: true, windows: [{ used: 400 }] });
    const second = await store.reserveBatch(batch(200), Date.now());
    expect(second).toEqual({ granted: false, budget: { index: 1, used: 400 } });
    expect((await store.peek('tpm', Date.now())).used).toBe(400);
    expect(await store.budgetUsed('account:a', '2026-11')).toBe(400);
    // Settled per budget, each once, though one reservation id covers both.
    await store.settleBudget('account:a', '2026-11', 400, 100);
    await store.settleBudget('key:k', '2026-11', 400, 100);
    expect(await store.budgetUsed('account:a', '2026-11')).toBe(100);
    expect(await store.budgetUsed('key:k', '2026-11')).toBe(100);
  });
});
