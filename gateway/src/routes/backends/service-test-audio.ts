// POST /v1/audio/speech, /v1/audio/transcriptions and /v1/audio/translations answered by service-test:
// real WAV/PCM audio, transcribed back.
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { JsonObject } from '../../http/body.ts';
import { invalidValue, missingParam, unknownParam } from '../../http/errors.ts';
import { synthesizeSpeech } from '../../service-test/audio.ts';
import { readSpeechParams, readTranscriptionParams, type AudioTask } from '../../service-test/audio-params.ts';
import { hear, renderTranscript } from '../../service-test/audio-transcribe.ts';
import type { SpooledForm } from '../../storage/multipart-spool.ts';

export async function serviceTestSpeech(ctx: Context, body: JsonObject): Promise<void> {
  const request = readSpeechParams(body);
  const audio = synthesizeSpeech(request, request.format);
  // Body first: Koa drops a Content-Length set before a stream body replaces another body.
  ctx.body = Readable.from(audio.chunks, { objectMode: false });
  ctx.type = audio.contentType;
  ctx.length = audio.byteLength;
}

export async function serviceTestTranscription(ctx: Context, form: SpooledForm, task: AudioTask): Promise<void> {
  for (const file of form.files) if (file.field !== 'file') throw unknownParam(file.field);
  const request = readTranscriptionParams(form.fields, task);
  if (form.files.length === 0) throw missingParam('file');
  if (form.files.length > 1) throw invalidValue('file', `Send exactly one file; got ${form.files.length}.`);
  const [file] = form.files;

  const transcript = renderTranscript(hear({ bytes: await form.read(file), filename: file.filename, mimeType: file.mimeType }), request);
  ctx.type = transcript.contentType;
  ctx.body = transcript.body;
}
