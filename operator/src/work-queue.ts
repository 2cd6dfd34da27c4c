// A keyed work queue in the manner of client-go's workqueue: a key waits at most once (adding it
// again while it waits changes nothing), one reconcile per key is in flight at a time (a key added
// while it is being processed is marked dirty and queued again once that reconcile ends), failures
// are re-queued with a per-key exponential backoff, and a reconcile can ask to be called again at a
// given time (an expiry, the next probe). Keys are strings such as `ApiKey/alice-x2b9q`.

export interface QueueOptions {
  /** Reconciles running at once (on different keys). */
  concurrency: number;
  /** First retry delay after a failure, doubled per consecutive failure of the same key. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export type Outcome = { requeueAfterMs?: number } | undefined;

export interface QueueHooks {
  /** Called after each reconcile with how long it took and whether it threw. */
  onDone?(key: string, durationMs: number, error: unknown): void;
  onDepth?(depth: number): void;
}

export class WorkQueue {
  #options: QueueOptions;
  #hooks: QueueHooks;
  #handler: (key: string) => Promise<Outcome>;
  /** Keys waiting to run, in order; `#waiting` mirrors it for O(1) membership. */
  #order: string[] = [];
  #waiting = new Set<string>();
  #processing = new Set<string>();
  /** Added while processing: run again when the current reconcile ends. */
  #dirty = new Set<string>();
  #failures = new Map<string, number>();
  /** One timer per key: the earliest time it asked (or failed) to run again. */
  #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  #running = false;
  /** Each returns true (and resolves its promise) once the queue is idle enough for it. */
  #idleWaiters: Array<() => boolean> = [];

  constructor(handler: (key: string) => Promise<Outcome>, options: QueueOptions, hooks: QueueHooks = {}) {
    this.#handler = handler;
    this.#options = options;
    this.#hooks = hooks;
  }

  /** Starts taking keys off the queue (keys added before are kept). */
  start(): void {
    this.#running = true;
    this.#pump();
  }

  /** Stops taking new keys; in-flight reconciles finish. Waiting keys and timers stay for a later start. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.idle(true);
  }

  /** Drops every waiting key and timer (leadership lost: the next leader reconciles from scratch). */
  clear(): void {
    this.#order = [];
    this.#waiting.clear();
    this.#dirty.clear();
    this.#failures.clear();
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#hooks.onDepth?.(0);
  }

  add(key: string): void {
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    this.#waiting.add(key);
    this.#order.push(key);
    this.#hooks.onDepth?.(this.depth);
    this.#pump();
  }

  /** Adds the key after `ms`; an earlier pending time for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const pending = this.#timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Forgets a key's failure count (the object is gone, or it finally reconciled). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  get depth(): number {
    return this.#order.length;
  }

  /** Resolves when nothing waits and nothing runs (timers aside); `inFlightOnly` ignores waiting keys. */
  idle(inFlightOnly = false): Promise<void> {
    const done = () => this.#processing.size === 0 && (inFlightOnly || this.#order.length === 0);
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idleWaiters.push(() => {
        if (!done()) return false;
        resolve();
        return true;
      });
    });
  }

  #pump(): void {
    while (this.#running && this.#processing.size < this.#options.concurrency && this.#order.length > 0) {
      const key = this.#order.shift()!;
      this.#waiting.delete(key);
      this.#processing.add(key);
      this.#hooks.onDepth?.(this.depth);
      void this.#run(key);
    }
  }

  async #run(key: string): Promise<void> {
    const started = performance.now();
    let error: unknown = null;
    let outcome: Outcome = undefined;
    try {
      outcome = await this.#handler(key);
    } catch (caught) {
      error = caught ?? new Error('reconcile failed');
    }
    this.#hooks.onDone?.(key, performance.now() - started, error);
    this.#processing.delete(key);
    if (error) {
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      this.addAfter(key, this.#backoff(failures));
    } else {
      this.#failures.delete(key);
      const after = outcome ? outcome.requeueAfterMs : undefined;
      if (after !== undefined) this.addAfter(key, after);
    }
    if (this.#dirty.delete(key)) this.add(key);
    this.#pump();
    this.#idleWaiters = this.#idleWaiters.filter((check) => !check());
  }

  #backoff(failures: number): number {
    const { baseDelayMs, maxDelayMs } = this.#options;
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(failures - 1, 20));
    return Math.round(ceiling * (0.5 + Math.random() / 2));
  }
}
