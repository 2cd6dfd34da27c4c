// The service-test backend: every model operation answered in-process by the built-in free model.
import type { GatewayDeps } from '../../deps.ts';
import type { ResponseStore } from '../../storage/response-store.ts';
import type { ModelBackend } from './backend.ts';
import { serviceTestSpeech, serviceTestTranscription } from './service-test-audio.ts';
import { serviceTestChat } from './service-test-chat.ts';
import { serviceTestEmbeddings } from './service-test-embeddings.ts';
import { serviceTestImageEdits, serviceTestImageGenerations } from './service-test-images.ts';
import { serviceTestResponses, type StoredResponse } from './service-test-responses.ts';

export function createServiceTestBackend(deps: GatewayDeps, responses: ResponseStore<StoredResponse>): ModelBackend {
  return {
    chatCompletions: (ctx, resolved, body) => serviceTestChat(ctx, deps, resolved, body),
    responses: (ctx, resolved, body) => serviceTestResponses(ctx, deps, responses, resolved, body),
    embeddings: (ctx, resolved, body) => serviceTestEmbeddings(ctx, resolved, body),
    imageGenerations: (ctx, _resolved, body) => serviceTestImageGenerations(ctx, deps, body),
    imageEdits: (ctx, _resolved, form) => serviceTestImageEdits(ctx, deps, form),
    speech: (ctx, _resolved, body) => serviceTestSpeech(ctx, body),
    transcription: (ctx, _resolved, form, task) => serviceTestTranscription(ctx, form, task),
  };
}
