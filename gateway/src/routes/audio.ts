// POST /v1/audio/speech, /v1/audio/transcriptions and /v1/audio/translations. service-test makes
// real WAV/PCM audio and transcribes it back; upstream models are proxied once proxying lands.
import { Readable } from 'node:stream';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { invalidValue, missingParam, unknownParam } from '../http/errors.ts';
import { collectStream, readMultipart, singleField } from '../http/multipart.ts';
import { synthesizeSpeech } from '../service-test/audio.ts';
import { readSpeechParams, readTranscriptionParams, type AudioTask } from '../service-test/audio-params.ts';
import { hear, renderTranscript } from '../service-test/audio-transcribe.ts';
import { forwardJson } from './forward.ts';
import { resolveModel, upstreamNotAvailable } from './model-access.ts';

export function registerAudioRoutes(router: Router, deps: GatewayDeps): void {
  router.post('/v1/audio/speech', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model);
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
  const limit = deps.config.maxBodyBytes;
  const form = await readMultipart(ctx, limit, async (part) => {
    if (part.field !== 'file') {
      part.stream.resume();
      return null;
    }
    // Bounded by the whole-request limit: an audio file may be most of a 50 MB request.
    return collectStream(part.stream, limit, 'file');
  });
  const resolved = resolveModel(ctx, singleField(form.fields, 'model'));
  if (resolved.kind === 'upstream') upstreamNotAvailable(resolved);

  for (const file of form.files) if (file.field !== 'file') throw unknownParam(file.field);
  const request = readTranscriptionParams(form.fields, task);
  if (form.files.length === 0) throw missingParam('file');
  if (form.files.length > 1) throw invalidValue('file', `Send exactly one file; got ${form.files.length}.`);
  const [file] = form.files;

  const transcript = renderTranscript(hear({ bytes: file.result!, filename: file.filename, mimeType: file.mimeType }), request);
  ctx.type = transcript.contentType;
  ctx.body = transcript.body;
}
