// The upstream backend: every model operation proxied to the model's targets (upstream/proxy.ts), with
// the ids a body references checked to be this account's first (the upstream cannot tell accounts apart).
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import { forwardJson } from '../forward.ts';
import { principalOf, type ResolvedModel } from '../model-access.ts';
import { relayForm } from '../multipart-relay.ts';
import { forwardResponseCreate } from '../responses-upstream.ts';
import { upstreamObjectsFor, upstreamOfReferences } from '../upstream-objects.ts';
import type { ModelBackend } from './backend.ts';
import { readWholeJson, type JsonObject } from '../../http/body.ts';
import { OPENAI_MAX_STRING_LENGTH } from '../../http/string-length.ts';
import { isTranslated } from '../../providers/registry.ts';
import { translatedResponses } from '../responses-translated.ts';
import type { ResponseMemory } from './service-test-responses.ts';

type UpstreamModel = Extract<ResolvedModel, { kind: 'upstream' }>;

function upstreamModel(resolved: ResolvedModel): UpstreamModel {
  if (resolved.kind !== 'upstream') throw new Error(`the upstream backend was given the ${resolved.kind} model '${resolved.id}'`);
  return resolved;
}

/**
 * A translated provider reads the whole body (it rewrites it below the top level), so a large one
 * parsed in a worker (http/body.ts) is materialised first; OpenAI-compatible targets of the same
 * model then get it serialised again. Bodies for OpenAI-only models stay bytes. A string past
 * OpenAI's length limit is refused as OpenAI refuses it: it could fit no model's context, and flattening
 * it on the event loop would hold every other request (string-length.ts).
 */
async function wholeIfTranslated(ctx: Context, model: UpstreamModel, body: JsonObject): Promise<JsonObject> {
  const upstreams = principalOf(ctx).snapshot.upstreams;
  const translated = model.model.spec.targets.some((target) => {
    const upstream = upstreams.get(target.upstream);
    return upstream !== undefined && isTranslated(upstream);
  });
  return translated ? readWholeJson(body, { maxStringLength: OPENAI_MAX_STRING_LENGTH }) : body;
}

/**
 * True when one of the model's targets has no Responses API (a translated provider, or an
 * OpenAI-compatible upstream with `responsesAPI: false`): every target then gets chat completions,
 * which all of them speak, so that fallback between them stays invisible.
 */
function needsResponsesTranslation(ctx: Context, model: UpstreamModel): boolean {
  const upstreams = principalOf(ctx).snapshot.upstreams;
  return model.model.spec.targets.some((target) => {
    const upstream = upstreams.get(target.upstream);
    return upstream !== undefined && (isTranslated(upstream) || upstream.spec.responsesAPI === false);
  });
}

export function createUpstreamBackend(deps: GatewayDeps, memory: ResponseMemory): ModelBackend {
  const objects = upstreamObjectsFor(deps);
  const checkReferences = (ctx: Context, body: unknown) => upstreamOfReferences(ctx, objects, body);
  return {
    async chatCompletions(ctx, resolved, body) {
      // A file id in a content part must be this account's.
      await checkReferences(ctx, body);
      const model = upstreamModel(resolved);
      return forwardJson(ctx, deps, model, '/chat/completions', await wholeIfTranslated(ctx, model, body), { streamKind: 'chat', operation: 'chat' });
    },
    async responses(ctx, resolved, body) {
      const model = upstreamModel(resolved);
      // A target without a Responses API: the gateway answers Responses itself, over chat completions.
      if (needsResponsesTranslation(ctx, model)) return translatedResponses(ctx, deps, memory, model, body);
      // File and vector store ids (input_file parts, file_search tools) must be this account's.
      await checkReferences(ctx, body);
      return forwardResponseCreate(ctx, deps, model, body);
    },
    embeddings: async (ctx, resolved, body) => {
      const model = upstreamModel(resolved);
      return forwardJson(ctx, deps, model, '/embeddings', await wholeIfTranslated(ctx, model, body), { operation: 'embeddings' });
    },
    imageGenerations: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/images/generations', body, { longRunning: true }),
    imageEdits: (ctx, resolved, form) => relayForm(ctx, deps, upstreamModel(resolved), '/images/edits', form, { longRunning: true }),
    speech: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/audio/speech', body),
    // Relayed as the upstream answers: json, verbose_json, text, srt and vtt keep their own content type.
    transcription: (ctx, resolved, form, task) => relayForm(ctx, deps, upstreamModel(resolved), task === 'transcribe' ? '/audio/transcriptions' : '/audio/translations', form, { streamKind: 'other' }),
    // Completion streams have chat's framing (a usage chunk with empty choices, then [DONE]).
    completions: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/completions', body, { streamKind: 'chat' }),
    moderations: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/moderations', body),
    imageVariations: (ctx, resolved, form) => relayForm(ctx, deps, upstreamModel(resolved), '/images/variations', form, { longRunning: true }),
    inputTokens: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/responses/input_tokens', body),
  };
}
