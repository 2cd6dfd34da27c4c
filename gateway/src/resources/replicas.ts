// How many gateway replicas are serving right now, for limits that are split between replicas
// (a plan's requests per minute divided by the live replica count). In Kubernetes it follows the
// ready endpoints of the gateway's Service; in file mode, and whenever the count is unknown, it is 1,
// which errs towards the full limit on each replica rather than towards starving clients.

export interface ReplicaCount {
  /** Ready replicas, at least 1 (this replica is serving when it asks). */
  current(): number;
  /** Called with the new count whenever it changes; returns the unsubscribe function. */
  onChange(listener: (n: number) => void): () => void;
}

/** File mode and single-process deployments: always one replica, never a change. */
export const SINGLE_REPLICA: ReplicaCount = Object.freeze({
  current: () => 1,
  onChange: () => () => undefined,
});

/** A count that a source updates; listeners hear only real changes. */
export class LiveReplicaCount implements ReplicaCount {
  #count = 1;
  #listeners = new Set<(n: number) => void>();

  current(): number {
    return this.#count;
  }

  onChange(listener: (n: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Zero ready endpoints (this pod before its first readiness pass) still means "at least me". */
  set(ready: number): void {
    const next = Math.max(1, Math.floor(ready));
    if (next === this.#count) return;
    this.#count = next;
    for (const listener of this.#listeners) listener(next);
  }
}

export interface EndpointSliceLike {
  endpoints?: Array<{
    addresses?: string[];
    conditions?: { ready?: boolean | null };
    targetRef?: { uid?: string; name?: string };
  }> | null;
}

/**
 * Ready endpoints across a Service's EndpointSlices. A dual-stack Service lists every pod once per
 * address family, so endpoints are counted by the pod they point at, falling back to the address.
 * `ready: null` means unknown, which the EndpointSlice API asks consumers to treat as ready.
 */
export function countReadyEndpoints(slices: Iterable<EndpointSliceLike>): number {
  const ready = new Set<string>();
  for (const slice of slices) {
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false) continue;
      const id = endpoint.targetRef?.uid ?? endpoint.targetRef?.name ?? endpoint.addresses?.[0];
      if (id) ready.add(id);
    }
  }
  return ready.size;
}
