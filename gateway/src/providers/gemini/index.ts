// The Gemini API (`provider: gemini`) and Vertex AI (`provider: vertex`, Google's own models): one
// translation of Gemini's GenerateContent for both, differing in paths, auth and a few body rules.
// Vertex also serves Anthropic's Claude models (a target model `claude-…`) with Anthropic's own API:
// for those the Anthropic translation speaks, moved to Vertex's paths (vertex-claude.ts).
import type { Upstream } from '@tollgate/crds';
import { defaultBaseURL } from '../endpoints.ts';
import type { ProviderModule, ProviderRequest, ProviderTranslation } from '../provider.ts';
import { geminiKeyAuth, vertexTokenAuth } from './auth.ts';
import { embeddings } from './embeddings.ts';
import { translateError } from './errors.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { chatStream } from './stream.ts';
import { anthropic as anthropicProvider } from '../anthropic/index.ts';
import { isClaudeOnVertex, onVertex, translateClaudeError } from './vertex-claude.ts';
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

/** Vertex's translation: Gemini's for Google's models, Anthropic's on Vertex's paths for Claude's (chosen per target model). */
function vertexTranslation(): ProviderTranslation {
  const google = translation('vertex');
  const anthropic = anthropicProvider.translation;
  return {
    ...google,
    chatRequest: (body, ctx, stream) =>
      isClaudeOnVertex(ctx.model) ? onVertex(anthropic.chatRequest(body, ctx, stream), ctx.upstream, ctx.model) : google.chatRequest(body, ctx, stream),
    chatResponse: (json, ctx) => (isClaudeOnVertex(ctx.providerModel) ? anthropic.chatResponse(json, ctx) : google.chatResponse(json, ctx)),
    // Only Anthropic's answers name a stop sequence; a Gemini answer has no stop_reason and gets null.
    chatStopSequence: anthropic.chatStopSequence,
    chatStream: (ctx) => (isClaudeOnVertex(ctx.providerModel) ? anthropic.chatStream(ctx) : google.chatStream(ctx)),
    error: translateClaudeError,
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
    probeModels: (json) => probeModels(surface, json),
  };
}

export const gemini: ProviderModule = { translation: translation('gemini'), auth: geminiKeyAuth };
export const vertex: ProviderModule = { translation: vertexTranslation(), auth: vertexTokenAuth() };
