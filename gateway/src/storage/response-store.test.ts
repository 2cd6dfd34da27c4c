import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ResponseStore } from './response-store.ts';

describe('ResponseStore', () => {
  const stores: Array<ResponseStore<string>> = [];
  const make = (options: ConstructorParameters<typeof ResponseStore>[0] = {}) => {
    const store = new ResponseStore<string>(options);
    stores.push(store);
    return store;
  };
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    for (const store of stores.splice(0)) store.close();
    vi.useRealTimers();
  });

  it('returns what was stored, only to the account that stored it', () => {
    const store = make();
    store.put('acme', 'resp_1', 'hello', 5);
    expect(store.get('acme', 'resp_1')).toBe('hello');
    expect(store.get('other', 'resp_1')).toBeUndefined();
    expect(store.get('acme', 'resp_unknown')).toBeUndefined();
  });

  it('deletes only for the owning account', () => {
    const store = make();
    store.put('acme', 'resp_1', 'hello', 5);
    expect(store.delete('other', 'resp_1')).toBe(false);
    expect(store.get('acme', 'resp_1')).toBe('hello');
    expect(store.delete('acme', 'resp_1')).toBe(true);
    expect(store.delete('acme', 'resp_1')).toBe(false);
    expect(store.get('acme', 'resp_1')).toBeUndefined();
    expect(store.bytes).toBe(0);
  });

  it('expires entries after the TTL, on read and by the sweeper', () => {
    const store = make({ ttlMs: 1000, sweepIntervalMs: 500 });
    store.put('acme', 'read', 'a', 1);
    store.put('acme', 'swept', 'b', 1);
    vi.advanceTimersByTime(999);
    expect(store.get('acme', 'read')).toBe('a');
    vi.advanceTimersByTime(1);
    expect(store.get('acme', 'read')).toBeUndefined();
    // The sweeper (due at 1000 ms) has already removed the other one without any read.
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  it('does not extend the TTL on reads', () => {
    const store = make({ ttlMs: 1000 });
    store.put('acme', 'resp_1', 'a', 1);
    vi.advanceTimersByTime(600);
    expect(store.get('acme', 'resp_1')).toBe('a');
    vi.advanceTimersByTime(600);
    expect(store.get('acme', 'resp_1')).toBeUndefined();
  });

  it('evicts the least recently used entry beyond the entry limit', () => {
    const store = make({ maxEntries: 2 });
    store.put('acme', 'a', 'A', 1);
    store.put('acme', 'b', 'B', 1);
    store.get('acme', 'a');
    store.put('acme', 'c', 'C', 1);
    expect(store.get('acme', 'b')).toBeUndefined();
    expect(store.get('acme', 'a')).toBe('A');
    expect(store.get('acme', 'c')).toBe('C');
    expect(store.size).toBe(2);
  });

  it('evicts by total bytes and refuses an entry larger than the whole budget', () => {
    const store = make({ maxBytes: 100 });
    store.put('acme', 'a', 'A', 40);
    store.put('acme', 'b', 'B', 40);
    store.put('acme', 'c', 'C', 40);
    expect(store.get('acme', 'a')).toBeUndefined();
    expect(store.bytes).toBe(80);
    expect(store.put('acme', 'huge', 'H', 101)).toBe(false);
    expect(store.get('acme', 'huge')).toBeUndefined();
    expect(store.get('acme', 'b')).toBe('B');
    expect(store.get('acme', 'c')).toBe('C');
  });

  it('replacing an id keeps the byte count honest', () => {
    const store = make();
    store.put('acme', 'a', 'A', 40);
    store.put('acme', 'a', 'AA', 10);
    expect(store.bytes).toBe(10);
    expect(store.get('acme', 'a')).toBe('AA');
  });

  it('close() stops the sweeper and empties the store', () => {
    const store = make({ ttlMs: 1000 });
    store.put('acme', 'a', 'A', 1);
    expect(vi.getTimerCount()).toBe(1);
    store.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(store.size).toBe(0);
  });
});
