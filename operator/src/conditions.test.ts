import { describe, expect, it } from 'vitest';
import { condition, nextConditions, readyFrom } from './conditions.ts';

describe('conditions', () => {
  it('moves lastTransitionTime only when the status changes, and stamps observedGeneration', () => {
    const t0 = new Date('2026-11-22T10:00:00Z');
    const t1 = new Date('2026-11-22T11:00:00Z');
    const first = nextConditions(undefined, [condition('Ready', 'False', 'AccountNotFound', 'no account')], 1, t0);
    expect(first).toEqual([{ type: 'Ready', status: 'False', observedGeneration: 1, lastTransitionTime: '2026-11-22T10:00:00Z', reason: 'AccountNotFound', message: 'no account' }]);
    const sameStatus = nextConditions(first, [condition('Ready', 'False', 'Other', 'other message')], 2, t1);
    expect(sameStatus[0]).toMatchObject({ lastTransitionTime: '2026-11-22T10:00:00Z', reason: 'Other', observedGeneration: 2 });
    const flipped = nextConditions(sameStatus, [condition('Ready', 'True', 'Ready', 'ok')], 2, t1);
    expect(flipped[0].lastTransitionTime).toBe('2026-11-22T11:00:00Z');
  });

  it('Ready takes the first failing condition, Unknown only when that one is unknown', () => {
    const good = { ResolvedRefs: 'True', Expired: 'False' } as const;
    expect(readyFrom([condition('ResolvedRefs', 'True', 'R', ''), condition('Expired', 'False', 'E', '')], good, 'fine')).toMatchObject({ status: 'True', message: 'fine' });
    expect(readyFrom([condition('ResolvedRefs', 'Unknown', 'Probing', 'wait'), condition('Expired', 'True', 'X', 'gone')], good, '')).toMatchObject({ status: 'Unknown', reason: 'Probing' });
    expect(readyFrom([condition('ResolvedRefs', 'True', 'R', ''), condition('Expired', 'True', 'ExpiresAtPassed', 'gone')], good, '')).toMatchObject({ status: 'False', reason: 'ExpiresAtPassed', message: 'gone' });
  });
});
