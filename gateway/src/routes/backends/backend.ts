// Model backends: who answers a model operation once the route has parsed the request, resolved the
// model and reserved its tokens. service-test answers in-process; upstream models are proxied. A
// route is `parse → resolveModel → reserve → backendOf(resolved).operation(...)`, so a provider that
// needs translating (Anthropic, Gemini) is one more backend, not one more branch in every route.
import type { Context } from 'koa';
import type { JsonObject } from '../../http/body.ts';
import type { AudioTask } from '../../service-test/audio-params.ts';
import type { SpooledForm } from '../../storage/multipart-spool.ts';
import type { ResolvedModel } from '../model-access.ts';

export interface ModelBackend {
  chatCompletions(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void>;
  responses(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void>;
  embeddings(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void>;
  imageGenerations(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void>;
  imageEdits(ctx: Context, resolved: ResolvedModel, form: SpooledForm): Promise<void>;
  speech(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void>;
  transcription(ctx: Context, resolved: ResolvedModel, form: SpooledForm, task: AudioTask): Promise<void>;
}

export interface Backends {
  of(resolved: ResolvedModel): ModelBackend;
}
