import { describe, expect, it } from 'vitest';
import { countReadyEndpoints, LiveReplicaCount, SINGLE_REPLICA } from './replicas.ts';

const endpoint = (uid: string, ready: boolean | null | undefined, address = `10.0.0.${uid.length}`) => ({ addresses: [address], conditions: { ready }, targetRef: { uid } });

describe('countReadyEndpoints', () => {
  it('counts ready pods once across slices (dual-stack lists each pod twice) and treats unknown readiness as ready', () => {
    const v4 = { endpoints: [endpoint('a', true), endpoint('b', null), endpoint('c', false)] };
    const v6 = { endpoints: [endpoint('a', true, 'fd00::1'), endpoint('b', undefined, 'fd00::2')] };
    expect(countReadyEndpoints([v4, v6])).toBe(2);
  });

  it('falls back to the address when an endpoint names no pod, and copes with empty slices', () => {
    expect(countReadyEndpoints([{ endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2'] }] }, { endpoints: null }, {}])).toBe(2);
  });
});

describe('replica counts', () => {
  it('never goes below one and tells listeners only about real changes', () => {
    const count = new LiveReplicaCount();
    const heard: number[] = [];
    const unsubscribe = count.onChange((n) => heard.push(n));
    count.set(0);
    count.set(3);
    count.set(3);
    count.set(0);
    unsubscribe();
    count.set(5);
    expect(heard).toEqual([3, 1]);
    expect(count.current()).toBe(5);
  });

  it('file mode is one replica, forever', () => {
    expect(SINGLE_REPLICA.current()).toBe(1);
    expect(typeof SINGLE_REPLICA.onChange(() => undefined)).toBe('function');
  });
});
