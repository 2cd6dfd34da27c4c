// Anthropic's Claude models on Vertex AI (`provider: vertex`, a target model `claude-…`). Vertex
// serves them with Anthropic's own Messages API behind Google's front door: the body is Anthropic's,
// without `model` (the path names it) and with `"anthropic_version": "vertex-2023-10-16"` in the body
// instead of the anthropic-version header; the answers, streams and most errors are Anthropic's. So
// the Anthropic translation (../anthropic/) builds and reads everything, and this module only moves
// a request to Vertex's path shape (`…/publishers/anthropic/models/{model}:rawPredict` or
// `:streamRawPredict`, `…/models/count-tokens:rawPredict`) and tells Anthropic's error envelope from
// Google's (a refused token or an exhausted quota is answered by Google, not by Claude).
import type { Upstream } from '@tollgate/crds';
import { translateError as anthropicError } from '../anthropic/errors.ts';
import type { ProviderRequest, TranslatedError } from '../provider.ts';
import { translateError as googleError } from './errors.ts';

/** The API version Vertex's Claude endpoints take in the body (they ignore the anthropic-version header). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** A target model that Vertex serves through Anthropic's API rather than Gemini's (`claude-sonnet-4-5@20250929`). */
export function isClaudeOnVertex(model: string): boolean {
  return model.startsWith('claude-');
}

/**
 * `/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:{method}`. The `@` of a Vertex
 * version (`claude-haiku-4-5@20251001`) stays as it is, as Google's own clients send it.
 */
export function claudePath(upstream: Upstream, model: string, method: 'rawPredict' | 'streamRawPredict'): string {
  const vertex = upstream.spec.vertex;
  // The schema's rule (a vertex upstream has vertex settings) makes a missing block unreachable for a valid object.
  if (!vertex) throw new Error(`Upstream '${upstream.metadata.name}' has no vertex settings`);
  const name = encodeURIComponent(model).replace(/%40/g, '@');
  return `/v1/projects/${encodeURIComponent(vertex.project)}/locations/${encodeURIComponent(vertex.location)}/publishers/anthropic/models/${name}:${method}`;
}

type Json = Record<string, unknown>;

/**
 * A request Anthropic's translation built for `/v1/messages` (or a Messages API body relayed as the
 * client sent it), moved to Vertex: the model goes from the body to the path, the API version from
 * the header to the body; other headers (anthropic-beta) stay headers.
 */
export function onVertex(request: ProviderRequest, upstream: Upstream, model: string, endpoint = '/v1/messages'): ProviderRequest {
  const body = JSON.parse(request.body) as Json;
  const headers = { ...request.headers };
  delete headers['anthropic-version'];
  const versioned = (json: Json): string => JSON.stringify({ ...json, anthropic_version: VERTEX_ANTHROPIC_VERSION });
  if (endpoint === '/v1/messages/count_tokens') {
    // Token counting is one endpoint for every Claude model: the model stays in the body.
    const path = claudePath(upstream, 'count-tokens', 'rawPredict');
    return { ...request, path, headers, body: versioned({ ...body, model }) };
  }
  const { model: _named, ...rest } = body;
  const path = claudePath(upstream, model, body.stream === true ? 'streamRawPredict' : 'rawPredict');
  return { ...request, path, headers, body: versioned(rest) };
}

/**
 * Vertex's Claude errors: Claude's own refusals (a bad request, an overload) come in Anthropic's
 * envelope (`{"type":"error","error":{…}}`), Google's front door answers in Google's
 * (`{"error":{"code","status",…}}`: an expired token, a quota, a model the project may not use).
 */
export function translateClaudeError(status: number, headers: Record<string, string | string[] | undefined>, text: string): TranslatedError {
  return isAnthropicEnvelope(text) ? anthropicError(status, headers, text) : googleError(status, headers, text);
}

function isAnthropicEnvelope(text: string): boolean {
  try {
    const body = JSON.parse(text) as unknown;
    return typeof body === 'object' && body !== null && !Array.isArray(body) && (body as Json).type === 'error';
  } catch {
    return false;
  }
}
