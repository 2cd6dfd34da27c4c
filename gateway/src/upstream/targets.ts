// The order in which a request tries a model's targets: ascending priority; within one priority a
// weighted random order (weight 0 = drained, used only when nothing else is left).
import type { Model, ModelTarget, Upstream } from '@tollgate/crds';
import type { Snapshot } from '../resources/snapshot.ts';

export interface Attempt {
  target: ModelTarget;
  upstream: Upstream;
  /** The model name sent upstream; null for requests that name no model (files, batches, threads). */
  upstreamModel: string | null;
}

/** The one attempt of a request that goes to a given upstream and names no model. */
export function directAttempt(upstream: Upstream): Attempt {
  return { target: { upstream: upstream.metadata.name }, upstream, upstreamModel: null };
}

export function orderTargets(model: Model, snapshot: Snapshot, random: () => number = Math.random): Attempt[] {
  const targets = model.spec.targets;
  // Most models have one target: nothing to order (a drained one is still the last resort).
  if (targets.length === 1) {
    const target = targets[0];
    const upstream = snapshot.upstreams.get(target.upstream);
    return upstream ? [{ target, upstream, upstreamModel: target.model ?? model.metadata.name }] : [];
  }
  const groups = new Map<number, ModelTarget[]>();
  for (const target of targets) {
    const priority = target.priority ?? 0;
    groups.set(priority, [...(groups.get(priority) ?? []), target]);
  }
  const ordered: ModelTarget[] = [];
  const drained: ModelTarget[] = [];
  for (const priority of [...groups.keys()].sort((a, b) => a - b)) {
    const pool = groups.get(priority)!.filter((t) => (t.weight ?? 1) > 0);
    drained.push(...groups.get(priority)!.filter((t) => (t.weight ?? 1) === 0));
    while (pool.length > 0) {
      const total = pool.reduce((sum, t) => sum + (t.weight ?? 1), 0);
      let pick = random() * total;
      let index = 0;
      while (index < pool.length - 1 && pick >= (pool[index].weight ?? 1)) pick -= pool[index++].weight ?? 1;
      ordered.push(pool.splice(index, 1)[0]);
    }
  }
  return [...ordered, ...drained].flatMap((target) => {
    const upstream = snapshot.upstreams.get(target.upstream);
    return upstream ? [{ target, upstream, upstreamModel: target.model ?? model.metadata.name }] : [];
  });
}
