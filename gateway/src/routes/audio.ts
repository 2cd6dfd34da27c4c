// POST /v1/audio/speech, /v1/audio/transcriptions and /v1/audio/translations. service-test makes
// real WAV/PCM audio and transcribes it back; upstream models are proxied (speech bytes streamed
// through; transcription forms spooled to disk, then relayed with the model rewritten per target).
import { Readable } from 'node:stream';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { invalidValue, missingParam, unknownParam } from '../http/errors.ts';
import { synthesizeSpeech } from '../service-test/audio.ts';
import { readSpeechParams, readTranscriptionParams, type AudioTask } from '../service-test/audio-params.ts';
import { hear, renderTranscript } from '../service-test/audio-transcribe.ts';
import { forwardJson } from './forward.ts';
import { resolveModel } from './model-access.ts';
import { relayForm, withSpooledForm } from './multipart-relay.ts';

export function registerAudioRoutes(router: Router, deps: GatewayDeps): void {
  router.post('/v1/audio/speech', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'audio.speech');
    if (resolved.kind === 'upstream') return forwardJson(ctx, deps, resolved, '/audio/speech', body);
    const request = readSpeechParams(body);
    const audio = synthesizeSpeech(request, request.format);
    // Body first: Koa drops a Content-Length set before a stream body replaces another body.
    ctx.body = Readable.from(audio.chunks, { objectMode: false });
    ctx.type = audio.contentType;
    ctx.length = audio.byteLength;
  });

  router.post('/v1/audio/transcriptions', (ctx) => transcribe(ctx, deps, 'transcribe'));
  router.post('/v1/audio/translations', (ctx) => transcribe(ctx, deps, 'translate'));
}

async function transcribe(ctx: Context, deps: GatewayDeps, task: AudioTask): Promise<void> {
  await withSpooledForm(ctx, deps, async (form) => {
    const resolved = resolveModel(ctx, form.field('model'), 'model', task === 'transcribe' ? 'audio.transcriptions' : 'audio.translations');
    // Relayed as the upstream answers: json, verbose_json, text, srt and vtt keep their own content type.
    if (resolved.kind === 'upstream') return relayForm(ctx, deps, resolved, task === 'transcribe' ? '/audio/transcriptions' : '/audio/translations', form, { streamKind: 'other' });

    for (const file of form.files) if (file.field !== 'file') throw unknownParam(file.field);
    const request = readTranscriptionParams(form.fields, task);
    if (form.files.length === 0) throw missingParam('file');
    if (form.files.length > 1) throw invalidValue('file', `Send exactly one file; got ${form.files.length}.`);
    const [file] = form.files;

    const transcript = renderTranscript(hear({ bytes: await form.read(file), filename: file.filename, mimeType: file.mimeType }), request);
    ctx.type = transcript.contentType;
    ctx.body = transcript.body;
  });
}
