// Leader election on a coordination.k8s.io/v1 Lease, the protocol of client-go's leaderelection: the
// holder renews spec.renewTime every retry period; a candidate takes the Lease over once it has seen
// no renewal for leaseDurationSeconds, measured on its own clock from when it last saw the Lease
// change (so clocks need not agree). Every write carries the resourceVersion it read, so of two
// candidates only one wins; the loser's 409 is retried from a fresh read. A leader that cannot renew
// within renewDeadline steps down before anyone else may take over; on shutdown it abandons the call
// in flight and releases the Lease within a short timeout of its own, so the next leader starts at
// once when the API server answers and shutdown is not held up when it does not (ADR 33).
import type { Logger } from 'pino';
import { isConflict, isNotFound, microTime, paths, type JsonObject, type KubeApi } from './kube-api.ts';

export interface LeaderOptions {
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface LeaderCallbacks {
  onStartedLeading(): void;
  onStoppedLeading(): void;
}

export class LeaderElector {
  #api: KubeApi;
  #log: Logger;
  #options: LeaderOptions;
  #callbacks: LeaderCallbacks;
  #leading = false;
  #stopped = false;
  #lastRenew = 0;
  /** The Lease as last seen, and when (our clock) its resourceVersion last changed. */
  #observed: { resourceVersion: string; at: number } | null = null;
  #timer: NodeJS.Timeout | null = null;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** Ends the call in flight when stop() is called: a stalled API server must not hold shutdown. */
  #abort = new AbortController();
  /** The Lease as this replica last wrote it while holding it; released from it without a read. */
  #held: JsonObject | null = null;

  constructor(api: KubeApi, log: Logger, options: LeaderOptions, callbacks: LeaderCallbacks) {
    this.#api = api;
    this.#log = log.child({ lease: options.name, identity: options.identity });
    this.#options = options;
    this.#callbacks = callbacks;
  }

  get leading(): boolean {
    return this.#leading;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops competing (the call in flight is abandoned); a leader releases the Lease (holderIdentity
   * cleared) so a successor need not wait. The release has `releaseTimeoutMs` in all: an API server
   * that refuses, stalls or has gone silent costs that long at most, and the Lease then expires.
   */
  async stop(releaseTimeoutMs: number): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error('shutting down'));
    this.#wake?.();
    await this.#loop;
    if (!this.#leading) return;
    this.#setLeading(false);
    const signal = AbortSignal.timeout(releaseTimeoutMs);
    try {
      if (await this.#release(signal)) this.#log.info('released the leader lease');
    } catch (error) {
      this.#log.warn({ err: (error as Error).message, releaseTimeoutMs }, 'could not release the leader lease; the next leader takes over when it expires');
    }
  }

  /** One write from the Lease as last held; a conflict (it changed since) is read once and retried. */
  async #release(signal: AbortSignal): Promise<boolean> {
    const path = paths(this.#api.namespace).lease(this.#options.name);
    const released = (lease: JsonObject) => ({ ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime() } });
    if (this.#held) {
      try {
        await this.#api.request('PUT', path, released(this.#held), undefined, signal);
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    const lease = await this.#api.request('GET', path, undefined, undefined, signal);
    if (lease.spec?.holderIdentity !== this.#options.identity) return false;
    await this.#api.request('PUT', path, released(lease), undefined, signal);
    return true;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#tryAcquireOrRenew();
      } catch (error) {
        // Abandoned by stop(): not a failure worth a warning.
        if (this.#stopped) break;
        if (!isConflict(error)) this.#log.warn({ err: (error as Error).message }, 'leader election: the Lease could not be read or written');
        else this.#log.debug('leader election: conflict; retrying from a fresh read');
      }
      if (this.#leading && Date.now() - this.#lastRenew > this.#options.renewDeadlineMs) {
        this.#log.warn({ renewDeadlineMs: this.#options.renewDeadlineMs }, 'could not renew the leader lease in time; stepping down');
        this.#setLeading(false);
      }
      if (this.#stopped) break;
      await this.#sleep(this.#options.retryPeriodMs * (this.#leading ? 1 : 0.8 + Math.random() * 0.4));
    }
  }

  async #tryAcquireOrRenew(): Promise<void> {
    const { name, identity, leaseDurationMs } = this.#options;
    const path = paths(this.#api.namespace).lease(name);
    const signal = this.#abort.signal;
    const now = Date.now();
    const spec = (acquire: boolean, transitions: number) => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.max(1, Math.round(leaseDurationMs / 1000)),
      ...(acquire ? { acquireTime: microTime(new Date(now)) } : {}),
      renewTime: microTime(new Date(now)),
      leaseTransitions: transitions,
    });
    let lease: JsonObject;
    try {
      lease = await this.#api.request('GET', path, undefined, undefined, signal);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const created = await this.#api.request('POST', paths(this.#api.namespace).lease(), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: spec(true, 0) }, undefined, signal);
      this.#observe(created, now);
      this.#held = created;
      this.#renewed(now);
      return;
    }
    this.#observe(lease, now);
    const holder = lease.spec?.holderIdentity as string | undefined;
    const transitions = Number(lease.spec?.leaseTransitions ?? 0);
    if (holder === identity) {
      const updated = await this.#api.request('PUT', path, { ...lease, spec: { ...lease.spec, ...spec(false, transitions) } }, undefined, signal);
      this.#observe(updated, now);
      this.#held = updated;
      this.#renewed(now);
      return;
    }
    if (this.#leading) this.#setLeading(false);
    const durationMs = Number(lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    const expired = !holder || now - this.#observed!.at > durationMs;
    if (!expired) return;
    const updated = await this.#api.request('PUT', path, { ...lease, spec: { ...lease.spec, ...spec(true, transitions + 1) } }, undefined, signal);
    this.#held = updated;
    this.#log.info({ previousHolder: holder ?? null }, 'took over the leader lease');
    this.#observe(updated, now);
    this.#renewed(now);
  }

  #observe(lease: JsonObject, now: number): void {
    const resourceVersion = String(lease.metadata?.resourceVersion ?? '');
    if (this.#observed?.resourceVersion !== resourceVersion) this.#observed = { resourceVersion, at: now };
  }

  #renewed(now: number): void {
    this.#lastRenew = now;
    if (!this.#leading) this.#setLeading(true);
  }

  #setLeading(leading: boolean): void {
    if (this.#leading === leading) return;
    this.#leading = leading;
    this.#log.info(leading ? 'became the leader' : 'no longer the leader');
    if (leading) this.#callbacks.onStartedLeading();
    else this.#callbacks.onStoppedLeading();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#timer = setTimeout(() => {
        this.#wake = null;
        resolve();
      }, ms);
      this.#wake = () => {
        if (this.#timer) clearTimeout(this.#timer);
        this.#wake = null;
        resolve();
      };
    });
  }
}
