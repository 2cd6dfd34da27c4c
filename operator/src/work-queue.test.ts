import { describe, expect, it } from 'vitest';
import { WorkQueue, type Outcome } from './work-queue.ts';

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(condition: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await tick(2);
  }
}

/** A handler whose calls the test finishes by hand, recording overlap per key. */
function gatedHandler() {
  const calls: Array<{ key: string; finish(outcome?: Outcome, error?: Error): void }> = [];
  const running = new Map<string, number>();
  let maxOverlapPerKey = 0;
  let maxRunning = 0;
  const handler = (key: string) =>
    new Promise<Outcome>((resolve, reject) => {
      running.set(key, (running.get(key) ?? 0) + 1);
      maxOverlapPerKey = Math.max(maxOverlapPerKey, running.get(key)!);
      maxRunning = Math.max(maxRunning, [...running.values()].reduce((a, b) => a + b, 0));
      calls.push({
        key,
        finish(outcome, error) {
          running.set(key, running.get(key)! - 1);
          if (error) reject(error);
          else resolve(outcome);
        },
      });
    });
  return { handler, calls, stats: () => ({ maxOverlapPerKey, maxRunning }) };
}

describe('WorkQueue', () => {
  it('holds a waiting key once, however often it is added', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => void seen.push(key), { concurrency: 1, baseDelayMs: 1, maxDelayMs: 10 });
    for (let i = 0; i < 5; i++) queue.add('Plan/a');
    queue.add('Plan/b');
    expect(queue.depth).toBe(2);
    queue.start();
    await queue.idle();
    expect(seen).toEqual(['Plan/a', 'Plan/b']);
  });

  it('never runs one key twice at once: an add during its reconcile runs it again afterwards', async () => {
    const { handler, calls, stats } = gatedHandler();
    const queue = new WorkQueue(handler, { concurrency: 4, baseDelayMs: 1, maxDelayMs: 10 });
    queue.start();
    queue.add('ApiKey/k');
    await until(() => calls.length === 1);
    queue.add('ApiKey/k');
    queue.add('ApiKey/k');
    await tick(20);
    expect(calls).toHaveLength(1);
    calls[0].finish();
    await until(() => calls.length === 2);
    calls[1].finish();
    await queue.idle();
    expect(calls).toHaveLength(2);
    expect(stats().maxOverlapPerKey).toBe(1);
  });

  it('runs different keys side by side up to the concurrency', async () => {
    const { handler, calls, stats } = gatedHandler();
    const queue = new WorkQueue(handler, { concurrency: 2, baseDelayMs: 1, maxDelayMs: 10 });
    queue.start();
    for (const k of ['a', 'b', 'c']) queue.add(`Model/${k}`);
    await until(() => calls.length === 2);
    await tick(20);
    expect(calls).toHaveLength(2);
    calls[0].finish();
    await until(() => calls.length === 3);
    calls[1].finish();
    calls[2].finish();
    await queue.idle();
    expect(stats().maxRunning).toBe(2);
  });

  it('re-queues a failed key with growing backoff, and forgets the failures once it succeeds', async () => {
    const times: number[] = [];
    let failuresLeft = 3;
    const outcomes: unknown[] = [];
    const queue = new WorkQueue(
      async () => {
        times.push(Date.now());
        if (failuresLeft-- > 0) throw new Error('409 conflict');
      },
      { concurrency: 1, baseDelayMs: 40, maxDelayMs: 1000 },
      { onDone: (_key, _ms, error) => outcomes.push(error ? 'error' : 'ok') },
    );
    queue.start();
    queue.add('Account/a');
    await until(() => outcomes.length === 4, 5000);
    expect(outcomes).toEqual(['error', 'error', 'error', 'ok']);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    // Full jitter between half and all of 40, 80, 160 ms.
    expect(gaps[0]).toBeGreaterThanOrEqual(18);
    expect(gaps[2]).toBeGreaterThanOrEqual(78);
    expect(gaps[2]).toBeGreaterThan(gaps[0]);
  });

  it('calls a key again when its reconcile asks for it (an expiry)', async () => {
    const times: number[] = [];
    const queue = new WorkQueue(
      async () => {
        times.push(Date.now());
        return times.length === 1 ? { requeueAfterMs: 60 } : undefined;
      },
      { concurrency: 1, baseDelayMs: 1, maxDelayMs: 10 },
    );
    queue.start();
    queue.add('ApiKey/expiring');
    await until(() => times.length === 2);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(55);
    await tick(100);
    expect(times).toHaveLength(2);
  });

  it('does nothing before start and after clear (leadership lost)', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => void seen.push(key), { concurrency: 1, baseDelayMs: 1, maxDelayMs: 10 });
    queue.add('Plan/a');
    queue.addAfter('Plan/b', 10);
    await tick(30);
    expect(seen).toEqual([]);
    queue.clear();
    queue.start();
    await tick(30);
    expect(seen).toEqual([]);
    queue.add('Plan/c');
    await queue.idle();
    expect(seen).toEqual(['Plan/c']);
  });
});
