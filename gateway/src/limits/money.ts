// Money as integers: every amount the gateway handles (prices, costs, budgets, spend) is a whole
// number of millionths of the gateway's currency ("micros"). Decimal strings from manifests are parsed
// digit by digit, never through a float, and every amount stays below 2^53, so sums in JavaScript
// and in Redis (HINCRBY, Lua doubles) are exact. Products of a token count and a price per million
// are made with BigInt, then rounded up to a whole micro: a request is never charged less than it cost.
import { MONEY_PATTERN } from '@tollgate/crds';

export const MICROS = 1_000_000;
const MICROS_BIG = 1_000_000n;
const VALID = new RegExp(MONEY_PATTERN);

/** "2.50" → 2_500_000. Throws on anything the schema would refuse (the schema checks it first). */
export function parseMoney(text: string): number {
  if (typeof text !== 'string' || !VALID.test(text)) throw new Error(`not an amount of money: ${JSON.stringify(text)} (a decimal string with at most six decimals, e.g. "2.50")`);
  const [whole, fraction = ''] = text.split('.');
  return Number(whole) * MICROS + Number(fraction.padEnd(6, '0'));
}

/** 2_500_000 → "2.50", 4215 → "0.004215": at least two decimals, no trailing zeros beyond them. */
export function formatMoney(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(Math.trunc(micros));
  const whole = Math.floor(abs / MICROS);
  let fraction = String(abs % MICROS).padStart(6, '0');
  while (fraction.length > 2 && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${sign}${whole}.${fraction}`;
}

/** Σ count × price-per-million, in micros, rounded up once (counts and prices are non-negative integers). */
export function perMillion(...terms: Array<[count: number, microsPerMillion: number]>): number {
  // Each price split into whole micros per token and the rest (below a million): with counts below
  // 2^31 every product and sum stays an exact double, so no BigInt is needed on a request's path.
  let whole = 0;
  let rest = 0;
  for (const [count, price] of terms) {
    if (!(count > 0 && price > 0)) continue;
    if (count >= 2 ** 31) return perMillionBig(terms);
    const perToken = Math.floor(price / MICROS);
    whole += count * perToken;
    rest += count * (price - perToken * MICROS);
  }
  return Math.min(Number.MAX_SAFE_INTEGER, whole + Math.ceil(rest / MICROS));
}

function perMillionBig(terms: Array<[count: number, microsPerMillion: number]>): number {
  let sum = 0n;
  for (const [count, price] of terms) if (count > 0 && price > 0) sum += BigInt(count) * BigInt(price);
  return toSafe((sum + MICROS_BIG - 1n) / MICROS_BIG);
}

/**
 * The cost of `tokens` at `microsPerMillion`, computed as the admission script does it in Lua (where
 * there is no BigInt): the price split into whole micros per token and the rest, so that no product
 * leaves the exact range of a double. Equal to perMillion([tokens, price]) for every count below 2^33.
 */
export function tokensCost(tokens: number, microsPerMillion: number): number {
  const whole = Math.floor(microsPerMillion / MICROS);
  const rest = microsPerMillion % MICROS;
  return tokens * whole + Math.ceil((tokens * rest) / MICROS);
}

/** `count` × `micros`, checked to stay exact. */
export function times(count: number, micros: number): number {
  return toSafe(BigInt(Math.max(0, Math.ceil(count))) * BigInt(micros));
}

/** Seconds (fractional, as a transcription reports them) × a price per second, rounded up to a micro. */
export function perSecond(seconds: number, microsPerSecond: number): number {
  if (!(seconds > 0) || microsPerSecond <= 0) return 0;
  // Milliseconds are as fine as any provider reports a duration.
  const ms = BigInt(Math.ceil(seconds * 1000));
  return toSafe((ms * BigInt(microsPerSecond) + 999n) / 1000n);
}

/** An amount too large to be exact is clamped: no budget could pay for it anyway. */
function toSafe(value: bigint): number {
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}
