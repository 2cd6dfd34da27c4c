import { describe, expect, it } from 'vitest';
import { OpenList } from './open-list.ts';

describe('OpenList', () => {
  it('holds what was added and not taken out, and counts it', () => {
    const list = new OpenList<string>();
    const a = list.add('a');
    const b = list.add('b');
    const c = list.add('c');
    expect(list.size).toBe(3);
    list.remove(b);
    expect(list.values().sort()).toEqual(['a', 'c']);
    list.remove(c);
    list.remove(a);
    expect(list.size).toBe(0);
    expect(list.values()).toEqual([]);
  });

  it('leaves a link taken out twice alone (the count stays right)', () => {
    const list = new OpenList<number>();
    const one = list.add(1);
    list.add(2);
    list.remove(one);
    list.remove(one);
    expect(list.size).toBe(1);
    expect(list.values()).toEqual([2]);
  });

  it('a link taken out points at nothing: a finished entry keeps no later one alive', () => {
    const list = new OpenList<number>();
    const first = list.add(1);
    const middle = list.add(2);
    list.add(3);
    list.remove(middle);
    expect(middle.prev).toBeNull();
    expect(middle.next).toBeNull();
    list.remove(first);
    expect(first.prev).toBeNull();
    expect(first.next).toBeNull();
  });

  it('can be gone through while entries are taken out (a copy is iterated)', () => {
    const list = new OpenList<number>();
    const links = [1, 2, 3, 4].map((n) => list.add(n));
    const seen: number[] = [];
    for (const value of list.values()) {
      seen.push(value);
      for (const link of links) list.remove(link);
    }
    expect(seen.sort()).toEqual([1, 2, 3, 4]);
    expect(list.size).toBe(0);
  });
});
