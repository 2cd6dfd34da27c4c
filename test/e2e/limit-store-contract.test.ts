// The in-process store and the shared one (a real redis-server) give the same answers to the same
// admissions and settlements: the order of checks, the refusals, the fitting of a default output to a
// budget, and what a settlement changes. The admission logic is written twice (TypeScript and Lua);
// this holds the two to one behaviour.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admission, AdmissionOutcome, Admitted, LimitStore, Settlement, TokenAsk } from '../../gateway/src/limits/limit-store.ts';
import { MemoryLimitStore } from '../../gateway/src/limits/memory-limit-store.ts';
import { RedisLimitStore } from '../../gateway/src/limits/redis-limit-store.ts';
import { SharedRedis } from '../../gateway/src/storage/redis-client.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const log = pino({ level: 'silent' });
const T0 = 3_000_000_000_000;
let redis: TestRedis;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const close of cleanup) await close();
  await redis?.close();
});

const stores: Record<string, () => Promise<LimitStore>> = {
  memory: async () => new MemoryLimitStore(),
  redis: async () => {
    const shared = new SharedRedis({ url: redis.url, log, prefix: `contract-${Math.random().toString(36).slice(2)}:` });
    await shared.waitReady();
    const store = new RedisLimitStore(shared, { log, callerClock: true });
    cleanup.push(async () => {
      store.close();
      await shared.close();
    });
    return store;
  },
};

const everything = (tokens: TokenAsk | null, budget = 1000): Admission => ({
  account: 'acme',
  slots: [{ key: 'account:acme:open', limit: 2 }, { key: 'key:k:open', limit: 1 }],
  requests: [{ key: 'account:acme:rpm', limit: 3 }],
  tokenWindows: [{ key: 'account:acme:tpm', limit: 600 }],
  budgets: [{ key: 'account:acme', limit: budget }, { key: 'key:k', limit: 500 }],
  period: '2026-11',
  tokens,
});
const exact = (amount: number): TokenAsk => ({ input: amount, output: 0, fit: false, minOutput: 0, choices: 1 });

function settlementOf(admission: Admission, outcome: AdmissionOutcome, actual: number): Settlement {
  const admitted = outcome as Admitted;
  return {
    account: 'acme',
    held: admitted.held,
    slots: admission.slots.map((s) => s.key),
    windows: admission.tokenWindows.map((w, i) => ({ key: w.key, ref: admitted.windows[i].ref })),
    budgets: admission.budgets.map((b) => b.key),
    period: admission.period,
    reserved: admitted.amount,
    actual,
    uncounted: [],
  };
}

for (const [name, create] of Object.entries(stores)) {
  describe(`the ${name} limit store`, () => {
    it('takes every limit of a request or none, refusing on the first that does not fit', async () => {
      const store = await create();
      const first = await store.admit(everything(exact(300)), T0);
      expect(first).toMatchObject({ admitted: true, amount: 300, cap: null, requests: [{ used: 1 }], windows: [{ used: 300 }] });
      // The key's slot set (the second) is full.
      expect(await store.admit(everything(exact(100)), T0 + 100)).toEqual({ admitted: false, refusal: { limit: 'concurrency', index: 1, open: 1 } });
      await store.settle(settlementOf(everything(exact(300)), first, 250), T0 + 200);
      // The key's budget (the second) has 250 used: 300 more would pass its 500.
      expect(await store.admit(everything(exact(300)), T0 + 300)).toEqual({ admitted: false, refusal: { limit: 'monthly', index: 1, used: 250, amount: 300 } });
      // The token window holds 250: 400 more would pass its 600; room comes when the first amount leaves
      // (the refused admission's emptied slot still sets the reset).
      expect(await store.admit(everything(exact(400)), T0 + 400)).toEqual({ admitted: false, refusal: { limit: 'tokens', index: 0, used: 250, waitMs: 60_100 - 400, resetMs: 60_000, amount: 400 } });
      // Larger than the window's limit on its own: never.
      expect(await store.admit(everything(exact(601)), T0 + 500)).toEqual({ admitted: false, refusal: { limit: 'too-large', budget: false, index: 0, amount: 601 } });
      // Every refusal gave back what it had taken: one request counted, 250 tokens, both slots free.
      const second = await store.admit(everything(exact(100)), T0 + 600);
      expect(second).toMatchObject({ admitted: true, requests: [{ used: 2 }], windows: [{ used: 350 }] });
      const third = await store.admit(everything(null), T0 + 700);
      expect(third).toEqual({ admitted: false, refusal: { limit: 'concurrency', index: 1, open: 1 } });
      await store.settle(settlementOf(everything(exact(100)), second, 0), T0 + 800);
      expect(await store.admit(everything(null), T0 + 900)).toMatchObject({ admitted: true, requests: [{ used: 3 }], windows: [{ ref: -1, used: 250 }], amount: 0 });
      expect(await store.admit(everything(null), T0 + 1000)).toEqual({ admitted: false, refusal: { limit: 'concurrency', index: 1, open: 1 } });
    });

    it('fits a default output to the smallest budget room and caps each answer to it', async () => {
      const store = await create();
      const admission = (output: number, fit: boolean) => everything({ input: 100, output, fit, minOutput: 16, choices: 3 }, 400);
      // The account's budget leaves 400 - 100 = 300 after the input: 100 per answer.
      const first = await store.admit(admission(500, true), T0);
      expect(first).toMatchObject({ admitted: true, amount: 400, cap: 100 });
      await store.settle(settlementOf(admission(500, true), first, 400), T0);
      // Room is now 0: the cap falls to the endpoint's minimum, and that no longer fits.
      expect(await store.admit(admission(500, true), T0 + 10)).toEqual({ admitted: false, refusal: { limit: 'monthly', index: 0, used: 400, amount: 148 } });
    });

    it('reserves money in every spend budget, fits a default output to what each still pays for, and settles to the cost', async () => {
      const store = await create();
      // $2/M input, $10/M output (micros per million); the account's budget 10,000 micros, the key's 6,000.
      const spendBudgets = [{ key: 'account:acme:spend', limit: 10_000 }, { key: 'key:k:spend', limit: 6_000 }];
      const ask = (output: number, fit: boolean): Admission => ({
        account: 'acme',
        slots: [],
        requests: [],
        tokenWindows: [],
        budgets: [],
        period: '2026-11',
        tokens: { input: 100, output, fit, minOutput: 1, choices: 1 },
        spendBudgets,
        spend: { fixed: 200, outputPerMillion: 10_000_000, floor: 0 },
      });
      const settle = (admission: Admission, outcome: AdmissionOutcome, cost: number): Settlement => ({
        ...settlementOf(admission, outcome, 0),
        spendBudgets: spendBudgets.map((b) => b.key),
        spendReserved: (outcome as Admitted).spend,
        spendActual: cost,
      });
      // Explicit 400 output tokens: 200 + 4,000 micros, reserved as they are.
      const first = await store.admit(ask(400, false), T0);
      expect(first).toMatchObject({ admitted: true, amount: 500, cap: null, spend: 4_200 });
      // A default output of 1,024 is fitted to the key's room: (6,000 − 4,200 − 200) / 10 = 160 tokens.
      const second = await store.admit(ask(1024, true), T0 + 1);
      expect(second).toMatchObject({ admitted: true, amount: 260, cap: 160, spend: 1_800 });
      // Nothing left in the key's budget for even one token.
      expect(await store.admit(ask(1024, true), T0 + 2)).toEqual({ admitted: false, refusal: { limit: 'spend', index: 1, used: 6_000, amount: 210 } });
      // Settled below the reservations: room comes back, exactly.
      await store.settle(settle(ask(400, false), first, 1_000), T0 + 3);
      await store.settle(settle(ask(1024, true), second, 1_800), T0 + 4);
      // The key has used 2,800 of 6,000: 3,200 − 200 of input leaves 300 output tokens.
      expect(await store.admit(ask(1024, true), T0 + 5)).toMatchObject({ admitted: true, cap: 300, spend: 3_200 });
      // An explicit limit that costs more than what is left is refused, not fitted.
      expect(await store.admit(ask(1, false), T0 + 6)).toEqual({ admitted: false, refusal: { limit: 'spend', index: 1, used: 6_000, amount: 210 } });
    });

    it('counts a request that ended before admission where the window has room, and charges usage reserved nowhere', async () => {
      const store = await create();
      const admission: Admission = { ...everything(null), slots: [] };
      const settle = (uncounted: boolean, actual: number): Settlement => ({
        account: 'acme',
        held: null,
        slots: [],
        windows: actual > 0 ? [{ key: 'account:acme:tpm', ref: -1 }] : [],
        budgets: actual > 0 ? ['account:acme'] : [],
        period: '2026-11',
        reserved: 0,
        actual,
        uncounted: uncounted ? admission.requests : [],
      });
      for (let i = 0; i < 5; i++) await store.settle(settle(true, 0), T0 + i);
      expect(await store.admit(admission, T0 + 10)).toMatchObject({ admitted: false, refusal: { limit: 'requests', used: 3 } });
      await store.settle(settle(false, 70), T0 + 20);
      expect(await store.admit({ ...admission, requests: [] }, T0 + 30)).toMatchObject({ admitted: true, windows: [{ used: 70 }] });
      expect(await store.admit({ ...admission, requests: [], tokenWindows: [], budgets: [admission.budgets[0]], tokens: exact(931) }, T0 + 40)).toMatchObject({ admitted: false, refusal: { limit: 'monthly', index: 0, used: 70 } });
    });
  });
}
