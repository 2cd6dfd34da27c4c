import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.ts';
import type { AnswerContext } from '../provider.ts';
import { gemini, vertex } from './index.ts';

const up = (provider: string, extra = {}) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'e' }, spec: { provider, ...extra } }) as Upstream;
const ctx: AnswerContext = { publicModel: 'embed', providerModel: 'm', requestId: 'r', created: 1, includeUsage: false, responseHeaders: {} };

describe('gemini embeddings', () => {
  it('batches inputs in order, 100 a call, with outputDimensionality', () => {
    const inputs = Array.from({ length: 150 }, (_, i) => `t${i}`);
    const requests = gemini.translation.embeddings!.requests({ input: inputs, dimensions: 3 }, { model: 'gemini-embedding-001', upstream: up('gemini') });
    expect(requests.map((r) => r.path)).toEqual(['/v1beta/models/gemini-embedding-001:batchEmbedContents', '/v1beta/models/gemini-embedding-001:batchEmbedContents']);
    const first = JSON.parse(requests[0].body);
    expect(first.requests).toHaveLength(100);
    expect(first.requests[0]).toEqual({ model: 'models/gemini-embedding-001', content: { parts: [{ text: 't0' }] }, outputDimensionality: 3 });
    expect(JSON.parse(requests[1].body).requests[0].content.parts[0].text).toBe('t100');
  });

  it('answers floats or base64 float32 little-endian, usage 0 when Gemini gives none', () => {
    const answer = { embeddings: [{ values: [0.5, -1] }, { values: [0.25, 2] }] };
    const floats = gemini.translation.embeddings!.response([answer], { input: ['a', 'b'] }, ctx);
    expect(floats).toEqual({ object: 'list', model: 'embed', usage: { prompt_tokens: 0, total_tokens: 0 }, data: [{ object: 'embedding', index: 0, embedding: [0.5, -1] }, { object: 'embedding', index: 1, embedding: [0.25, 2] }] });
    const encoded = gemini.translation.embeddings!.response([answer], { input: ['a', 'b'], encoding_format: 'base64' }, ctx) as { data: { embedding: string }[] };
    const bytes = Buffer.from(encoded.data[0].embedding, 'base64');
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual([0.5, -1]);
  });

  it('uses :predict on Vertex, one input a call for gemini-embedding models, and sums token counts', () => {
    const upstream = up('vertex', { vertex: { project: 'p', location: 'europe-west4' } });
    const one = vertex.translation.embeddings!.requests({ input: ['a', 'b'] }, { model: 'gemini-embedding-001', upstream });
    expect(one).toHaveLength(2);
    expect(one[0].path).toBe('/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-embedding-001:predict');
    const many = vertex.translation.embeddings!.requests({ input: ['a', 'b'], dimensions: 4 }, { model: 'text-embedding-005', upstream });
    expect(JSON.parse(many[0].body)).toEqual({ instances: [{ content: 'a' }, { content: 'b' }], parameters: { outputDimensionality: 4 } });
    const answer = { predictions: [{ embeddings: { values: [1], statistics: { token_count: 3 } } }, { embeddings: { values: [2], statistics: { token_count: 4 } } }] };
    expect(vertex.translation.embeddings!.response([answer], { input: ['a', 'b'] }, ctx).usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
  });

  it('refuses token-id input naming it', () => {
    expect(() => gemini.translation.embeddings!.requests({ input: [[1, 2]] }, { model: 'm', upstream: up('gemini') })).toThrow(ApiError);
  });
});
