import { describe, expect, it } from 'vitest';
import { SlidingWindow, WINDOW_MS } from './sliding-window.ts';

const T0 = 1_700_000_000_000;

describe('SlidingWindow', () => {
  it('admits exactly the limit, refuses one more, and frees each amount a full window after it arrived', () => {
    const window = new SlidingWindow();
    const limit = 3;
    for (let i = 0; i < limit; i++) {
      expect(window.waitFor(1, limit, T0 + i * 1000)).toBe(0);
      window.add(1, T0 + i * 1000);
    }
    expect(window.waitFor(1, limit, T0 + 2500)).toBeGreaterThan(0);
    // The first request (T0) must still count just before a full window has passed...
    expect(window.waitFor(1, limit, T0 + WINDOW_MS - 1)).toBeGreaterThan(0);
    // ...and be gone at most one 100 ms slot after it.
    const wait = window.waitFor(1, limit, T0 + 2500);
    expect(T0 + 2500 + wait).toBeGreaterThanOrEqual(T0 + WINDOW_MS);
    expect(T0 + 2500 + wait).toBeLessThanOrEqual(T0 + WINDOW_MS + 100);
    expect(window.waitFor(1, limit, T0 + 2500 + wait)).toBe(0);
    // Only the first has left: the second still blocks a second extra request.
    expect(window.waitFor(2, limit, T0 + 2500 + wait)).toBeGreaterThan(0);
  });

  it('never holds more than the limit in any 60-second span (no 2x at a boundary)', () => {
    const window = new SlidingWindow();
    const limit = 10;
    const admitted: number[] = [];
    for (let t = T0; t < T0 + 5 * WINDOW_MS; t += 137) {
      if (window.waitFor(1, limit, t) === 0) {
        window.add(1, t);
        admitted.push(t);
      }
    }
    for (let i = 0; i + limit < admitted.length; i++) expect(admitted[i + limit] - admitted[i]).toBeGreaterThanOrEqual(WINDOW_MS);
    expect(admitted.length).toBeGreaterThanOrEqual(4 * limit);
  });

  it('settles a reservation up or down in place, never below zero', () => {
    const window = new SlidingWindow();
    const ref = window.add(500, T0);
    window.add(100, T0 + 5000);
    window.adjust(ref, -480, T0 + 6000);
    expect(window.used(T0 + 6000)).toBe(120);
    window.adjust(ref, +50, T0 + 6000);
    expect(window.used(T0 + 6000)).toBe(170);
    window.adjust(ref, -10_000, T0 + 6000);
    expect(window.used(T0 + 6000)).toBe(100);
    // After the slot has left the window, settling it changes nothing.
    window.adjust(ref, 1000, T0 + WINDOW_MS + 200);
    expect(window.used(T0 + WINDOW_MS + 200)).toBe(100);
  });

  it('reports the time until it is empty and forgets everything after a window of silence', () => {
    const window = new SlidingWindow();
    window.add(1, T0);
    window.add(1, T0 + 10_000);
    const reset = window.resetIn(T0 + 20_000);
    expect(reset).toBeGreaterThanOrEqual(50_000);
    expect(reset).toBeLessThanOrEqual(50_100);
    expect(window.used(T0 + 10_000 + WINDOW_MS + 100)).toBe(0);
    expect(window.empty).toBe(true);
  });

  it('keeps amounts added with an older timestamp in order, counted no shorter', () => {
    const window = new SlidingWindow();
    window.add(1, T0 + 30_000);
    window.add(1, T0);
    expect(window.used(T0 + 30_000 + WINDOW_MS - 1)).toBe(2);
    expect(window.used(T0 + 30_000 + WINDOW_MS + 100)).toBe(0);
  });
});
