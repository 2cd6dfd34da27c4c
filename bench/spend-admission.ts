// What a spend budget adds to one admission and settlement, in process: the in-memory limit store
// (single-process mode) admitting and settling a chat request with every token limit set, with and
// without a spend budget and a priced model, interleaved round by round. The shared store's cost is
// its one ADMIT script either way (the spend budget is two more keys in the same call).
// node bench/spend-admission.ts [--requests 200000] [--rounds 6]
import { parseArgs } from 'node:util';
import { admissionOf, admissionPlanOf } from '../gateway/src/limits/admission-plan.ts';
import { MemoryLimitStore } from '../gateway/src/limits/memory-limit-store.ts';
import { parseMoney } from '../gateway/src/limits/money.ts';
import { tokensAsk, type Prices } from '../gateway/src/limits/pricing.ts';
import type { LimitScope } from '../gateway/src/limits/scopes.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '200000' }, rounds: { type: 'string', default: '6' } } });
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);

const base = { requestsPerMinute: 1e12, tokensPerMinute: 1e15, concurrentRequests: 1e9, tokensPerMonth: 1e15 };
const scope = (id: string, limits: LimitScope['limits']): LimitScope => ({ id, label: id, account: 'acme', limits, keys: { open: `${id}:open`, rpm: `${id}:rpm`, tpm: `${id}:tpm`, spend: `${id}:spend` } });
const tokensOnly = admissionPlanOf([scope('account:acme', base)]);
const withSpend = admissionPlanOf([scope('account:acme', { ...base, spendPerMonth: parseMoney('999999.00') })]);
const prices: Prices = { input: parseMoney('2.50'), cachedInput: parseMoney('1.25'), output: parseMoney('10.00'), perRequest: 0, perAudioSecond: 0, perMillionCharacters: 0, imageDefault: null, images: [] };
const estimate = { input: 120, output: 1024, outputParam: null, choices: 1, minOutput: 1 };

function run(priced: boolean): number {
  const store = new MemoryLimitStore();
  const plan = priced ? withSpend : tokensOnly;
  const started = process.hrtime.bigint();
  let now = Date.UTC(2026, 10, 27);
  for (let i = 0; i < REQUESTS; i++) {
    now += 1;
    const spend = priced ? tokensAsk(prices, estimate.input) : null;
    const outcome = store.admit(admissionOf(plan, estimate, '2026-11', spend), now);
    if (!outcome.admitted) throw new Error('refused');
    store.settle({ account: 'acme', held: outcome.held, slots: plan.slotBounds.map((b) => b.key), windows: plan.tokenBounds.map((b, w) => ({ key: b.key, ref: outcome.windows[w].ref })), budgets: plan.budgetBounds.map((b) => b.key), period: '2026-11', reserved: outcome.amount, actual: 400, uncounted: [], ...(priced ? { spendBudgets: plan.spendBounds.map((b) => b.key), spendReserved: outcome.spend, spendActual: 4_300 } : {}) }, now);
  }
  return Number(process.hrtime.bigint() - started) / 1000 / REQUESTS;
}

run(false);
run(true);
const results: Array<[number, number]> = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [false, true] : [true, false];
  const times = new Map(order.map((priced) => [priced, run(priced)]));
  results.push([times.get(false)!, times.get(true)!]);
}
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const plain = median(results.map(([a]) => a));
const spent = median(results.map(([, b]) => b));
console.log(`admission + settlement, in-process store, ${REQUESTS.toLocaleString('en')} requests × ${ROUNDS} rounds`);
console.log(`  token limits only:          ${plain.toFixed(3)} µs`);
console.log(`  plus a spend budget (priced): ${spent.toFixed(3)} µs  (+${(spent - plain).toFixed(3)} µs, median of round ratios ${((median(results.map(([a, b]) => b / a)) - 1) * 100).toFixed(1)}%)`);
