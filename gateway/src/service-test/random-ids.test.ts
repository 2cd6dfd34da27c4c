import { describe, expect, it } from 'vitest';
import { randomHexId, randomId } from './random-ids.ts';

describe('random ids from the pooled source', () => {
  it('are shaped as OpenAI ids and never repeat, across many refills of the pool', () => {
    const seen = new Set<string>();
    // 20,000 × 15 bytes is over seventy refills of the pool.
    for (let i = 0; i < 20_000; i++) {
      const id = randomId('chatcmpl-', 15);
      expect(id).toMatch(/^chatcmpl-[A-Za-z0-9]{20}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(20_000);
    const hex = new Set(Array.from({ length: 5000 }, () => randomHexId('resp_', 24)));
    expect(hex.size).toBe(5000);
    for (const id of hex) expect(id).toMatch(/^resp_[0-9a-f]{48}$/);
  });
});
