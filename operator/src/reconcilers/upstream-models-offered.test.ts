// The Upstream's conditions count the models offered only when the probe read a model list: a
// translated provider whose probe is no list (Vertex's countTokens, Bedrock's ListAsyncInvokes) is
// not said to offer 0 models.
import { describe, expect, it } from 'vitest';
import type { Informers, Obj } from '../informers.ts';
import type { ProbeResult } from '../probes.ts';
import type { ReconcileContext } from './types.ts';
import { evaluateUpstream } from './upstream.ts';

const upstream: Obj = { metadata: { name: 'aws', uid: 'uid-aws', generation: 1, resourceVersion: '1' }, spec: { provider: 'bedrock', bedrock: { region: 'us-east-1' } } };
const world = (probe: Partial<ProbeResult>): ReconcileContext => ({
  informers: { get: () => undefined, list: () => [], secret: () => undefined } as unknown as Informers,
  probe: () => ({ at: '2026-11-22T12:00:00Z', target: 'GET https://bedrock/async-invoke?maxResults=1', reachable: true, httpStatus: 200, latencyMs: 12, failures: 0, ...probe }),
  usage: () => null,
  now: () => new Date('2026-11-22T12:00:00Z'),
});
const message = (evaluation: ReturnType<typeof evaluateUpstream>, type: string) => (evaluation.conditions.find((c) => c.type === type) as unknown as { message: string }).message;

describe('models offered in the Upstream conditions', () => {
  it('says nothing of a count when the probe is no model list', () => {
    const evaluation = evaluateUpstream(upstream, world({}));
    expect(message(evaluation, 'CredentialsValid')).toBe('GET https://bedrock/async-invoke?maxResults=1 accepted the credentials');
    expect(message(evaluation, 'Ready')).not.toMatch(/models offered/);
    expect(evaluation.fields.models).toBeUndefined();
  });

  it('counts the models when the probe listed them', () => {
    const evaluation = evaluateUpstream(upstream, world({ models: ['a', 'b', 'c'] }));
    expect(message(evaluation, 'CredentialsValid')).toBe('GET https://bedrock/async-invoke?maxResults=1 accepted the credentials (3 models offered)');
    expect(message(evaluation, 'Ready')).toMatch(/\(3 models offered\)/);
  });
});
