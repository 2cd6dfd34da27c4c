// The Gemini API (`provider: gemini`) and Vertex AI (`provider: vertex`, Google's own models): one
// translation of Gemini's GenerateContent for both, differing in paths, auth and a few body rules.
import type { Upstream } from '@tollgate/crds';
import { defaultBaseURL } from '../endpoints.ts';
import type { ProviderModule, ProviderRequest, ProviderTranslation } from '../provider.ts';
import { geminiKeyAuth, vertexTokenAuth } from './auth.ts';
import { embeddings } from './embeddings.ts';
import { translateError } from './errors.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { chatStream } from './stream.ts';
import { modelPath, type GoogleSurface } from './variant.ts';

/** The model Vertex's probe counts tokens with: the call needs the permission chat needs, and is free. */
export const VERTEX_PROBE_MODEL = 'gemini-2.5-flash';

function probe(surface: GoogleSurface, upstream: Upstream): ProviderRequest {
  if (surface === 'gemini') return { path: '/v1beta/models?pageSize=1', method: 'GET', headers: {}, body: '' };
  return {
    path: `${modelPath('vertex', upstream, VERTEX_PROBE_MODEL)}:countTokens`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'ping' }] }] }),
  };
}

function translation(surface: GoogleSurface): ProviderTranslation {
  return {
    name: surface,
    semconvName: surface === 'gemini' ? 'gcp.gemini' : 'gcp.vertex_ai',
    defaultBaseURL: (upstream) => defaultBaseURL(upstream) ?? '',
    chatRequest: (body, ctx, stream) => chatRequest(surface, body, ctx, stream),
    chatResponse,
    chatStream,
    error: translateError,
    embeddings: embeddings(surface),
    probe: (upstream) => probe(surface, upstream),
  };
}

export const gemini: ProviderModule = { translation: translation('gemini'), auth: geminiKeyAuth };
export const vertex: ProviderModule = { translation: translation('vertex'), auth: vertexTokenAuth() };
