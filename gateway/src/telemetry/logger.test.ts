import { describe, expect, it } from 'vitest';
import { isoTimestamp } from './logger.ts';

describe('isoTimestamp', () => {
  it('writes what toISOString writes, across seconds, milliseconds and days', () => {
    const start = Date.UTC(2026, 10, 30, 23, 59, 58, 990);
    for (let t = start; t < start + 3000; t += 7) {
      expect(isoTimestamp(t)).toBe(`,"time":"${new Date(t).toISOString()}"`);
    }
    // Going back in time (a clock step) must not reuse the later second's prefix.
    expect(isoTimestamp(start)).toBe(`,"time":"${new Date(start).toISOString()}"`);
  });
});
