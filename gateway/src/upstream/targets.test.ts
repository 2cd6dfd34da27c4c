import { describe, expect, it } from 'vitest';
import type { Model, ModelTarget, Upstream } from '@tollgate/crds';
import { Snapshot } from '../resources/snapshot.ts';
import { orderTargets } from './targets.ts';

const API = 'tollgate.dev/v1alpha1';
const upstream = (name: string): Upstream => ({ apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { baseURL: `http://${name}.test/v1` } }) as Upstream;
const model = (targets: ModelTarget[]): Model => ({ apiVersion: API, kind: 'Model', metadata: { name: 'public' }, spec: { targets } }) as Model;
const snapshot = new Snapshot([upstream('a'), upstream('b'), upstream('c')]);
const names = (m: Model, random?: () => number) => orderTargets(m, snapshot, random).map((a) => `${a.upstream.metadata.name}:${a.upstreamModel}`);

describe('orderTargets', () => {
  it('a single target is the one attempt, with its own model name or the public one, drained or not', () => {
    expect(names(model([{ upstream: 'a' }]))).toEqual(['a:public']);
    expect(names(model([{ upstream: 'a', model: 'up' }]))).toEqual(['a:up']);
    expect(names(model([{ upstream: 'a', weight: 0 }]))).toEqual(['a:public']);
    expect(names(model([{ upstream: 'missing' }]))).toEqual([]);
  });

  it('several targets go by priority, weighted within one, drained ones last, unknown upstreams skipped', () => {
    const m = model([
      { upstream: 'c', priority: 2 },
      { upstream: 'a', priority: 1, weight: 1 },
      { upstream: 'b', priority: 1, weight: 3, model: 'b-name' },
      { upstream: 'missing', priority: 0 },
      { upstream: 'c', priority: 0, weight: 0, model: 'drained' },
    ]);
    // random 0.5 of a total weight of 4 picks b (a covers [0, 1), b [1, 4)).
    expect(names(m, () => 0.5)).toEqual(['b:b-name', 'a:public', 'c:public', 'c:drained']);
    expect(names(m, () => 0.1)).toEqual(['a:public', 'b:b-name', 'c:public', 'c:drained']);
  });
});
