// The service-test backend: every model operation answered in-process by the built-in free model.
import type { GatewayDeps } from '../../deps.ts';
import { readWholeJson, type JsonObject } from '../../http/body.ts';
import { OPENAI_MAX_STRING_LENGTH } from '../../http/string-length.ts';
import { moderate } from '../../service-test/moderations.ts';
import type { ModelBackend } from './backend.ts';
import { serviceTestSpeech, serviceTestTranscription } from './service-test-audio.ts';
import { serviceTestChat } from './service-test-chat.ts';
import { serviceTestEmbeddings } from './service-test-embeddings.ts';
import { serviceTestImageEdits, serviceTestImageGenerations } from './service-test-images.ts';
import { serviceTestCompletions } from './service-test-completions.ts';
import { serviceTestImageVariations } from './service-test-image-variations.ts';
import { serviceTestInputTokens, serviceTestResponses, type ResponseMemory } from './service-test-responses.ts';

// service-test reads whole requests: a large body's members left in the parser worker are brought
// to the event loop first, a bounded piece at a time (http/body.ts readWholeJson). Like OpenAI, it
// refuses a string longer than 10 MiB characters, whatever the request's size.
const readWhole = (body: JsonObject) => readWholeJson(body, { maxStringLength: OPENAI_MAX_STRING_LENGTH });

export function createServiceTestBackend(deps: GatewayDeps, memory: ResponseMemory): ModelBackend {
  return {
    chatCompletions: async (ctx, resolved, body) => serviceTestChat(ctx, deps, resolved, await readWhole(body)),
    responses: async (ctx, resolved, body) => serviceTestResponses(ctx, deps, memory, resolved, await readWhole(body)),
    embeddings: async (ctx, resolved, body) => serviceTestEmbeddings(ctx, resolved, await readWhole(body)),
    imageGenerations: async (ctx, _resolved, body) => serviceTestImageGenerations(ctx, deps, await readWhole(body)),
    imageEdits: (ctx, _resolved, form) => serviceTestImageEdits(ctx, deps, form),
    speech: async (ctx, _resolved, body) => serviceTestSpeech(ctx, await readWhole(body)),
    transcription: (ctx, _resolved, form, task) => serviceTestTranscription(ctx, form, task),
    completions: async (ctx, resolved, body) => serviceTestCompletions(ctx, deps, resolved, await readWhole(body)),
    moderations: async (ctx, resolved, body) => {
      ctx.body = moderate(await readWhole(body), resolved.id);
    },
    imageVariations: (ctx, _resolved, form) => serviceTestImageVariations(ctx, deps, form),
    inputTokens: async (ctx, _resolved, body) => serviceTestInputTokens(ctx, deps, memory, await readWhole(body)),
  };
}
