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

/** The most models the Gemini API lists in one page: the whole list, so the operator can report it. */
const PROBE_PAGE_SIZE = 1000;

function probe(surface: GoogleSurface, upstream: Upstream): ProviderRequest {
  if (surface === 'gemini') return { path: `/v1beta/models?pageSize=${PROBE_PAGE_SIZE}`, method: 'GET', headers: {}, body: '' };
  return {
    path: `${modelPath('vertex', upstream, VERTEX_PROBE_MODEL)}:countTokens`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'ping' }] }] }),
  };
}

/**
 * The Gemini API's probe answers its model list, `models[].name` (`models/gemini-2.5-flash`), as the
 * ids a Model names; a page with more after it is not the whole list. Vertex's probe counts tokens:
 * no list.
 */
function probeModels(surface: GoogleSurface, json: unknown): string[] | undefined {
  if (surface !== 'gemini') return undefined;
  const list = json as { models?: unknown; nextPageToken?: unknown } | null;
  if (!Array.isArray(list?.models) || list.nextPageToken) return undefined;
  return list.models.map((model) => model?.name).filter((name): name is string => typeof name === 'string').map((name) => name.replace(/^models\//, ''));
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
    probeModels: (json) => probeModels(surface, json),
  };
}

export const gemini: ProviderModule = { translation: translation('gemini'), auth: geminiKeyAuth };
export const vertex: ProviderModule = { translation: translation('vertex'), auth: vertexTokenAuth() };
