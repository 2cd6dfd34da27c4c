// Layer: before a chat request is translated for a provider that cannot fetch an image itself
// (Gemini, Vertex AI, Bedrock take only inline bytes), its http(s) image URLs are fetched and inlined
// as data URLs (remote-images/). Providers stay pure transforms: they see data URLs only. The fetch
// happens at most once per request, on the first attempt that needs it; a later attempt on such a
// provider (fallback) reuses the inlined body, and attempts on OpenAI-compatible or Anthropic
// upstreams, which fetch for themselves, get the client's URLs. The attempt's own clock starts after
// the fetch, so the upstream's timings are its own; the fetch's time is the access line's `imageFetch`.
import type { JsonObject } from '../http/body.ts';
import type { AttemptRequest, Layer } from './call.ts';
import { remoteImageParts, type RemoteImages } from './remote-images/inline-images.ts';

/** `Upstream.spec.provider` values whose APIs take images only as bytes. */
const INLINE_ONLY = new Set(['gemini', 'vertex', 'bedrock']);

export function withRemoteImages(images: RemoteImages | null): Layer {
  if (!images || !images.settings.enabled) return (next) => next;
  // The inlined body of each request, made once: keyed by the request every attempt shares.
  const inlined = new WeakMap<AttemptRequest, Promise<JsonObject | null>>();
  return (next) => (call) => {
    const { request } = call;
    const json = request.json;
    if (request.operation !== 'chat' || !json || !INLINE_ONLY.has(call.attempt.upstream.spec.provider ?? 'openai')) return next(call);
    let pending = inlined.get(request);
    if (!pending) {
      const parts = remoteImageParts(json);
      if (parts.length === 0) return next(call);
      pending = images.inline(call.exchange, json, parts);
      inlined.set(request, pending);
    }
    return pending.then((body) => {
      if (!body) return { kind: 'aborted' };
      // The same call object goes on: the layers above read what the ones below set on it (secrets, verdict).
      call.request = { ...request, json: body };
      call.record.startedAt = performance.now();
      return next(call);
    });
  };
}
