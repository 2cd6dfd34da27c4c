// Between probes (the prober restarted, or was reset when the Upstream or its Secret changed), a
// reconcile keeps what the last probe wrote in the status: its conditions, and what it called
// (`probeTarget`), which a status written without it would drop while CredentialsValid still says True.
import { describe, expect, it } from 'vitest';
import type { Informers, Obj } from '../informers.ts';
import type { ReconcileContext } from './types.ts';
import { evaluateUpstream } from './upstream.ts';

const target = 'POST https://vertex/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:countTokens';
const upstream: Obj = {
  metadata: { name: 'vertex', uid: 'uid-vertex', generation: 1, resourceVersion: '7' },
  spec: { provider: 'vertex', vertex: { project: 'p', location: 'l' }, credentials: { env: 'SA' } },
  status: {
    probeTarget: target,
    reachable: true,
    latencyMs: 9,
    lastProbeTime: '2026-11-22T12:00:00Z',
    conditions: [{ type: 'CredentialsValid', status: 'True', reason: 'Accepted', message: `${target} accepted the credentials` }],
  },
};
const noProbeYet: ReconcileContext = {
  informers: { get: () => undefined, list: () => [], secret: () => undefined } as unknown as Informers,
  probe: () => undefined,
  usage: () => null,
  now: () => new Date('2026-11-22T12:00:05Z'),
};

describe('an Upstream reconciled between probes', () => {
  it('keeps the last probe target beside the conditions it supports', () => {
    const evaluation = evaluateUpstream(upstream, noProbeYet);
    expect(evaluation.fields.probeTarget).toBe(target);
    expect(evaluation.conditions.find((c) => c.type === 'CredentialsValid')).toMatchObject({ status: 'True', reason: 'Accepted' });
  });
});
