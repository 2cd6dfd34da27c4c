// The operator's probe of a translated provider reads the model ids from the provider's own list
// shape (Anthropic `data[].id`, the Gemini API `models[].name`), and none where the probe call is no
// model list (Vertex's countTokens, Bedrock's ListAsyncInvokes): no count rather than a false 0.
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { providerProbe } from './probe.ts';

const upstream = (spec: Record<string, unknown>) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'u' }, spec }) as Upstream;
const probeOf = (spec: Record<string, unknown>) => providerProbe(upstream(spec), () => undefined)!;

describe("the provider probe's model ids", () => {
  it("Gemini API: models[].name without its models/ prefix, from a whole list", () => {
    const probe = probeOf({ provider: 'gemini' });
    expect(probe.url).toMatch(/\/v1beta\/models\?pageSize=1000$/);
    expect(probe.modelIds({ models: [{ name: 'models/gemini-2.5-flash' }, { name: 'models/gemini-2.5-pro' }, { displayName: 'no name' }] })).toEqual(['gemini-2.5-flash', 'gemini-2.5-pro']);
    // A page with more after it is not the whole list, so it says nothing of what is offered.
    expect(probe.modelIds({ models: [{ name: 'models/gemini-2.5-flash' }], nextPageToken: 'next' })).toBeUndefined();
    expect(probe.modelIds({ data: [{ id: 'gpt-4o' }] })).toBeUndefined();
  });

  it('Anthropic: data[].id, unless more pages follow', () => {
    const probe = probeOf({ provider: 'anthropic' });
    expect(probe.modelIds({ data: [{ id: 'claude-sonnet-4-5' }, { id: 'claude-haiku-4-5' }], has_more: false })).toEqual(['claude-sonnet-4-5', 'claude-haiku-4-5']);
    expect(probe.modelIds({ data: [{ id: 'claude-sonnet-4-5' }], has_more: true })).toBeUndefined();
  });

  it('Vertex AI and Bedrock: their probes are no model list, so no ids', () => {
    expect(probeOf({ provider: 'vertex', vertex: { project: 'p', location: 'us-central1' } }).modelIds({ totalTokens: 1 })).toBeUndefined();
    expect(probeOf({ provider: 'bedrock', bedrock: { region: 'us-east-1' } }).modelIds({ asyncInvokeSummaries: [] })).toBeUndefined();
    // Even an answer that happens to look like a list is not read as one.
    expect(probeOf({ provider: 'bedrock', bedrock: { region: 'us-east-1' } }).modelIds({ modelSummaries: [{ modelId: 'x' }], data: [{ id: 'x' }] })).toBeUndefined();
  });
});
