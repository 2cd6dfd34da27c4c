// Holds the current snapshot. Sources (the YAML file today, Kubernetes informers later) hand it a
// complete resource list; it builds the next snapshot off to the side and swaps one reference.
import type { AnyResource } from '@tollgate/crds';
import { Snapshot } from './snapshot.ts';

export type SnapshotListener = (snapshot: Snapshot) => void;

export interface ResourceSource {
  /** Loads the first complete state (rejects when it is invalid) and keeps following changes. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export class ResourceStore {
  #current: Snapshot = new Snapshot([]);
  #listeners = new Set<SnapshotListener>();
  #generation = 0;

  get current(): Snapshot {
    return this.#current;
  }

  /** Number of snapshots applied; lets tests and health checks wait for a reload. */
  get generation(): number {
    return this.#generation;
  }

  apply(resources: readonly AnyResource[]): Snapshot {
    const next = new Snapshot(resources);
    this.#current = next;
    this.#generation += 1;
    for (const listener of this.#listeners) listener(next);
    return next;
  }

  onChange(listener: SnapshotListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
