import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { anthropic } from '../anthropic/index.ts';
import { claudeModel } from '../anthropic/models.ts';
import { defaultBaseURL } from '../endpoints.ts';
import { providerProbe } from '../probe.ts';
import { vertex } from './index.ts';
import { claudePath, isClaudeOnVertex, onVertex, translateClaudeError } from './vertex-claude.ts';

const upstream = (location = 'us-east5'): Upstream =>
  ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'v' }, spec: { provider: 'vertex', vertex: { project: 'proj-1', location }, credentials: { env: 'SA' } } }) as Upstream;

const chat = { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], max_completion_tokens: 50, stop: ['END'] };

describe('Claude on Vertex: the request', () => {
  it("is Anthropic's body without the model, with Vertex's version, on rawPredict", () => {
    const model = 'claude-sonnet-4-5@20250929';
    const sent = vertex.translation.chatRequest(chat, { model, upstream: upstream() }, false);
    const direct = anthropic.translation.chatRequest(chat, { model, upstream: upstream() }, false);
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    const { model: _model, ...rest } = JSON.parse(direct.body);
    expect(JSON.parse(sent.body)).toEqual({ ...rest, anthropic_version: 'vertex-2023-10-16' });
    expect(sent.headers['anthropic-version']).toBeUndefined();
    expect(sent.headers['content-type']).toBe('application/json');
  });

  it('streams on streamRawPredict; the global location keeps its region-less host', () => {
    const sent = vertex.translation.chatRequest(chat, { model: 'claude-haiku-4-5@20251001', upstream: upstream('global') }, true);
    expect(sent.path).toBe('/v1/projects/proj-1/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict');
    expect(JSON.parse(sent.body).stream).toBe(true);
    expect(defaultBaseURL(upstream('global'))).toBe('https://aiplatform.googleapis.com');
  });

  it("leaves Google's models on Gemini's API", () => {
    expect(isClaudeOnVertex('gemini-2.5-pro')).toBe(false);
    expect(vertex.translation.chatRequest(chat, { model: 'gemini-2.5-pro', upstream: upstream() }, false).path).toMatch(/publishers\/google\/models\/gemini-2\.5-pro:generateContent$/);
  });

  it('counts tokens on the one count-tokens endpoint, the model kept in the body', () => {
    const relayed = { path: '/v1/messages/count_tokens', method: 'POST' as const, headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1' }, body: JSON.stringify({ model: 'claude-opus-4-6', messages: [] }) };
    const sent = onVertex(relayed, upstream(), 'claude-opus-4-6', '/v1/messages/count_tokens');
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
    expect(JSON.parse(sent.body)).toEqual({ model: 'claude-opus-4-6', messages: [], anthropic_version: 'vertex-2023-10-16' });
    expect(sent.headers).toEqual({ 'anthropic-beta': 'b1' });
  });

  it('encodes what a path segment cannot hold, but not the @ of a version', () => {
    expect(claudePath(upstream(), 'claude-x@2025/../y', 'rawPredict')).toMatch(/models\/claude-x@2025%2F..%2Fy:rawPredict$/);
  });

  it("knows a Vertex '@' id's generation (Sonnet 4 thinks with a budget)", () => {
    expect(claudeModel('claude-sonnet-4@20250514')).toEqual(claudeModel('claude-sonnet-4-20250514'));
    expect(claudeModel('claude-sonnet-4@20250514').thinking).toBe('budget');
  });
});

describe('Claude on Vertex: errors', () => {
  it("reads Claude's envelope as Anthropic's and Google's as Google's", () => {
    const overloaded = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_vrtx_1' });
    expect(translateClaudeError(529, {}, overloaded)).toMatchObject({ status: 503, code: 'upstream_overloaded', retryAfter: '1' });
    const invalid = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 300000 tokens > 200000 maximum' } });
    expect(translateClaudeError(400, {}, invalid)).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    const quota = JSON.stringify({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '30s' }] } });
    expect(translateClaudeError(429, {}, quota)).toMatchObject({ status: 429, retryAfter: '30' });
    const expired = JSON.stringify({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'Request had invalid authentication credentials.' } });
    expect(translateClaudeError(401, {}, expired)).toMatchObject({ status: 502, code: 'upstream_auth_failed', credentialRefused: true });
    expect(vertex.translation.error).toBe(translateClaudeError);
  });
});

describe('Claude on Vertex: the probe', () => {
  it("stays Gemini's free token count and lists no models, so Claude targets are never called not offered", () => {
    const probe = providerProbe(upstream(), () => undefined)!;
    expect(probe.url).toMatch(/publishers\/google\/models\/gemini-2\.5-flash:countTokens$/);
    expect(probe.modelIds({ totalTokens: 1 })).toBeUndefined();
    expect(probe.credentialRefused(401, {}, JSON.stringify({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'x' } }))).toBe(true);
  });
});
