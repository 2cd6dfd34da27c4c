import { describe, expect, it } from 'vitest';
import { formatDuration, rateLimitHeaders, retryHeaders } from './headers.ts';

describe('rate-limit headers', () => {
  it("formats reset times the way OpenAI does", () => {
    expect(formatDuration(0)).toBe('0ms');
    expect(formatDuration(17.2)).toBe('18ms');
    expect(formatDuration(1000)).toBe('1s');
    expect(formatDuration(7660)).toBe('7.66s');
    expect(formatDuration(360_000)).toBe('6m0s');
    expect(formatDuration(61_500)).toBe('1m1.5s');
  });

  it('never reports negative room and never asks a client to come back early', () => {
    expect(rateLimitHeaders('tokens', { limit: 10, remaining: -5, resetMs: 1200 })).toEqual({
      'x-ratelimit-limit-tokens': '10',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '1.2s',
    });
    expect(retryHeaders(1001)).toEqual({ 'Retry-After': '2', 'retry-after-ms': '1001' });
    expect(retryHeaders(0.2)).toEqual({ 'Retry-After': '1', 'retry-after-ms': '1' });
  });
});
