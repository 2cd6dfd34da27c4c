import { describe, expect, it } from 'vitest';
import { formatMoney, parseMoney, perMillion, perSecond, tokensCost } from './money.ts';
import { affordableOutput, spendOf } from './token-fit.ts';

describe('money in micros', () => {
  it('parses decimal strings digit by digit and formats them back', () => {
    expect(parseMoney('2.50')).toBe(2_500_000);
    expect(parseMoney('0.000001')).toBe(1);
    expect(parseMoney('999999.999999')).toBe(999_999_999_999);
    expect(parseMoney('15')).toBe(15_000_000);
    for (const bad of ['1e3', '-1', '0.1234567', '1,50', '', ' 1', '1.', '.5', '1234567']) expect(() => parseMoney(bad)).toThrow(/not an amount of money/);
    expect(formatMoney(2_500_000)).toBe('2.50');
    expect(formatMoney(4215)).toBe('0.004215');
    expect(formatMoney(0)).toBe('0.00');
    expect(formatMoney(1_000_000_000)).toBe('1000.00');
  });

  it('prices tokens exactly and rounds up once, where floating point would not', () => {
    // 0.1 + 0.2 in floats is 0.30000000000000004; in micros it is 300000.
    expect(perMillion([1_000_000, parseMoney('0.1')], [1_000_000, parseMoney('0.2')])).toBe(300_000);
    // 3 tokens at $0.15/M is 0.45 micros: charged 1 micro, never 0.
    expect(perMillion([3, parseMoney('0.15')])).toBe(1);
    expect(perMillion([600, 2_000_000], [400, 500_000], [500, 8_000_000])).toBe(5_400);
    expect(perSecond(90, parseMoney('0.0001'))).toBe(9_000);
    // Counts past 2^31 take the BigInt path, with the same rounding.
    expect(perMillion([2 ** 31, 1_500_001])).toBe(Math.ceil((2 ** 31 * 1_500_001) / 1e6));
    expect(perMillion([2 ** 31 + 1, 3], [5, 999_999])).toBe(Number((BigInt(2 ** 31 + 1) * 3n + 5n * 999_999n + 999_999n) / 1_000_000n));
    expect(perSecond(1.5, parseMoney('0.006'))).toBe(9_000);
  });

  it("splits a price as the admission script does, with the same results as BigInt arithmetic", () => {
    for (const price of [1, 999_999, 1_000_000, 2_500_000, 75_000_123, 999_999_999_999]) {
      for (const tokens of [0, 1, 7, 1024, 333_333, 8_589_934_591]) expect(tokensCost(tokens, price)).toBe(perMillion([tokens, price]));
    }
  });

  it('fits an output to what a budget still pays for, exactly', () => {
    // $10/M output: 100 micros buy 10 tokens, 99 buy 9.
    expect(affordableOutput(100, 10_000_000, 1024)).toBe(10);
    expect(affordableOutput(99, 10_000_000, 1024)).toBe(9);
    expect(affordableOutput(1_000_000_000, 10_000_000, 1024)).toBe(1024);
    expect(affordableOutput(0, 10_000_000, 1024)).toBe(0);
    // An odd price where the double's guess is off: the steps correct it.
    for (const room of [1, 2, 3, 50, 51, 1000]) {
      const out = affordableOutput(room, 3_333_333, 100_000);
      expect(tokensCost(out, 3_333_333)).toBeLessThanOrEqual(room);
      expect(tokensCost(out + 1, 3_333_333)).toBeGreaterThan(room);
    }
    expect(spendOf({ fixed: 10, outputPerMillion: 10_000_000, floor: 0 }, 5)).toBe(60);
    expect(spendOf({ fixed: 10, outputPerMillion: 0, floor: 1000 }, 5)).toBe(1000);
  });
});
