// POST /v1/audio/speech, /v1/audio/transcriptions and /v1/audio/translations: parse, resolve the model,
// hand over to its backend (service-test makes real audio and transcribes it back,
// backends/service-test-audio.ts; upstream models are proxied: speech bytes streamed through,
// transcription forms spooled to disk and relayed with the model rewritten per target).
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import type { AudioTask } from '../service-test/audio-params.ts';
import type { Backends } from './backends/backend.ts';
import { reserveForParameters, resolveModel } from './model-access.ts';
import { withSpooledForm } from './multipart-relay.ts';

export function registerAudioRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/audio/speech', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'audio.speech');
    await reserveForParameters(ctx, deps, { by: 'speech', input: body.input });
    return backends.of(resolved).speech(ctx, resolved, body);
  });

  router.post('/v1/audio/transcriptions', (ctx) => transcribe(ctx, deps, backends, 'transcribe'));
  router.post('/v1/audio/translations', (ctx) => transcribe(ctx, deps, backends, 'translate'));
}

function transcribe(ctx: Context, deps: GatewayDeps, backends: Backends, task: AudioTask): Promise<void> {
  return withSpooledForm(ctx, deps, async (form) => {
    const resolved = resolveModel(ctx, form.field('model'), 'model', task === 'transcribe' ? 'audio.transcriptions' : 'audio.translations');
    await reserveForParameters(ctx, deps, { by: 'audio', fileBytes: form.files.find((part) => part.field === 'file')?.spooled.bytes ?? 0 });
    return backends.of(resolved).transcription(ctx, resolved, form, task);
  });
}
