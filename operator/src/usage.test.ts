import { describe, expect, it } from 'vitest';
import type { Obj } from './informers.ts';
import { combine, nextMonthStart, usageEndpoints } from './usage.ts';

const answer = (replica: string, scope: 'replica' | 'cluster', month: string, inputTokens: number) => ({ replica, scope, month, accounts: { acme: { inputTokens, outputTokens: 1, requests: 1 } } });

describe('usage roll-up', () => {
  it('sums replica answers, one per ready endpoint, even when two processes share a host name', () => {
    const combined = combine([answer('gw-1', 'replica', '2026-11', 10), answer('gw-2', 'replica', '2026-11', 5), answer('gw-2', 'replica', '2026-11', 5)]);
    expect(combined).toEqual({ month: '2026-11', replicas: 3, currency: 'USD', keys: {}, accounts: { acme: { inputTokens: 20, outputTokens: 3, requests: 3, spend: '0.00' } } });
  });

  it('sums spend exactly per account and per key, as millionths (0.1 + 0.2 is 0.30)', () => {
    const spent = (spend: string, key: string) => ({
      replica: 'gw',
      scope: 'replica' as const,
      month: '2026-11',
      currency: 'EUR',
      accounts: { acme: { inputTokens: 1, outputTokens: 1, requests: 1, spend } },
      keys: { [key]: { account: 'acme', inputTokens: 1, outputTokens: 1, requests: 1, spend } },
    });
    const combined = combine([spent('0.1', 'ci'), spent('0.2', 'ci'), spent('0.000001', 'web')]);
    expect(combined).toMatchObject({ currency: 'EUR', accounts: { acme: { spend: '0.300001', requests: 3 } }, keys: { ci: { account: 'acme', spend: '0.30', requests: 2 }, web: { spend: '0.000001' } } });
  });

  it('takes one cluster answer alone (already the shared total)', () => {
    expect(combine([answer('gw-1', 'cluster', '2026-11', 40), answer('gw-2', 'cluster', '2026-11', 40)])?.accounts.acme.inputTokens).toBe(40);
  });

  it('counts only the newest month when replicas straddle a month boundary', () => {
    const combined = combine([answer('gw-1', 'replica', '2026-11', 10), answer('gw-2', 'replica', '2026-12', 3)]);
    expect(combined).toMatchObject({ month: '2026-12', accounts: { acme: { inputTokens: 3 } } });
    expect(nextMonthStart('2026-12')).toBe('2027-01-01T00:00:00Z');
  });

  it('reads ready endpoints from EndpointSlices, with the slice port named metrics', () => {
    const slices = [
      { metadata: { name: 's1' }, ports: [{ name: 'http', port: 8080 }, { name: 'metrics', port: 9100 }], endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true }, targetRef: { uid: 'p1' } }, { addresses: ['10.0.0.2'], conditions: { ready: false }, targetRef: { uid: 'p2' } }] },
      { metadata: { name: 's2' }, ports: [{ name: 'http', port: 8080 }], endpoints: [{ addresses: ['fd00::3'], conditions: { ready: null }, targetRef: { uid: 'p3' } }] },
    ] as unknown as Obj[];
    expect(usageEndpoints(slices, 9464)).toEqual(['10.0.0.1:9100', '[fd00::3]:9464']);
  });
});
