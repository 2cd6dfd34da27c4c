// The upstream backend: every model operation proxied to the model's targets (upstream/proxy.ts), with
// the ids a body references checked to be this account's first (the upstream cannot tell accounts apart).
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import { forwardJson } from '../forward.ts';
import type { ResolvedModel } from '../model-access.ts';
import { relayForm } from '../multipart-relay.ts';
import { forwardResponseCreate } from '../responses-upstream.ts';
import { upstreamObjectsFor, upstreamOfReferences } from '../upstream-objects.ts';
import type { ModelBackend } from './backend.ts';

type UpstreamModel = Extract<ResolvedModel, { kind: 'upstream' }>;

function upstreamModel(resolved: ResolvedModel): UpstreamModel {
  if (resolved.kind !== 'upstream') throw new Error(`the upstream backend was given the ${resolved.kind} model '${resolved.id}'`);
  return resolved;
}

export function createUpstreamBackend(deps: GatewayDeps): ModelBackend {
  const objects = upstreamObjectsFor(deps);
  const checkReferences = (ctx: Context, body: unknown) => upstreamOfReferences(ctx, objects, body);
  return {
    async chatCompletions(ctx, resolved, body) {
      // A file id in a content part must be this account's.
      await checkReferences(ctx, body);
      return forwardJson(ctx, deps, upstreamModel(resolved), '/chat/completions', body, { streamKind: 'chat' });
    },
    async responses(ctx, resolved, body) {
      // File and vector store ids (input_file parts, file_search tools) must be this account's.
      await checkReferences(ctx, body);
      return forwardResponseCreate(ctx, deps, upstreamModel(resolved), body);
    },
    embeddings: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/embeddings', body),
    imageGenerations: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/images/generations', body, { longRunning: true }),
    imageEdits: (ctx, resolved, form) => relayForm(ctx, deps, upstreamModel(resolved), '/images/edits', form, { longRunning: true }),
    speech: (ctx, resolved, body) => forwardJson(ctx, deps, upstreamModel(resolved), '/audio/speech', body),
    // Relayed as the upstream answers: json, verbose_json, text, srt and vtt keep their own content type.
    transcription: (ctx, resolved, form, task) => relayForm(ctx, deps, upstreamModel(resolved), task === 'transcribe' ? '/audio/transcriptions' : '/audio/translations', form, { streamKind: 'other' }),
  };
}
