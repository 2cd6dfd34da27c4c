// The parameters of service-test's audio endpoints: speech from a JSON body, transcriptions and
// translations from multipart fields. Unknown or ill-typed parameters are a 400 naming them.
import type { JsonObject } from '../http/body.ts';
import { invalidRequest, invalidType, invalidValue, missingParam, unknownParam } from '../http/errors.ts';
import { isObject, optionalNumber, optionalString, rejectUnknown } from '../http/params.ts';
import type { SpeechFormat, SpeechOptions } from './audio.ts';

export const MAX_SPEECH_INPUT_CHARS = 4096;
const SPEECH_FORMATS: readonly SpeechFormat[] = ['wav', 'pcm'];
/** Real OpenAI formats that would need an encoder service-test does not carry. */
const UNENCODABLE_SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac'];
const SPEECH_PARAMS = new Set(['model', 'input', 'voice', 'response_format', 'speed', 'instructions', 'stream_format']);

export interface SpeechRequest extends SpeechOptions {
  format: SpeechFormat;
}

export function readSpeechParams(body: JsonObject): SpeechRequest {
  rejectUnknown(body, SPEECH_PARAMS);
  const input = optionalString(body, 'input');
  if (input === undefined) throw missingParam('input');
  if (input.length === 0) throw invalidValue('input', 'The input is empty; send the text to speak.');
  if (input.length > MAX_SPEECH_INPUT_CHARS) throw invalidValue('input', `The input is ${input.length} characters long; the maximum is ${MAX_SPEECH_INPUT_CHARS}.`);

  const voice = voiceOf(body.voice ?? undefined);

  // OpenAI's default is mp3, which service-test cannot encode; it answers WAV instead, the one
  // format every audio tool reads and that carries the text for the transcription round trip.
  const format = optionalString(body, 'response_format') ?? 'wav';
  if (!isOneOf(format, SPEECH_FORMATS)) {
    const supported = SPEECH_FORMATS.map((f) => `'${f}'`).join(' and ');
    if (UNENCODABLE_SPEECH_FORMATS.includes(format)) {
      throw invalidRequest(`service-test cannot encode '${format}'; it produces ${supported}. Upstream models offer the other formats.`, 'response_format', 'unsupported_value');
    }
    throw invalidValue('response_format', `Invalid response_format '${format}'; one of ${[...UNENCODABLE_SPEECH_FORMATS, ...SPEECH_FORMATS].map((f) => `'${f}'`).join(', ')} (service-test produces ${supported}).`);
  }

  const speed = optionalNumber(body, 'speed', { min: 0.25, max: 4 }) ?? 1;
  const instructions = optionalString(body, 'instructions') ?? null;
  if (instructions !== null && instructions.length > MAX_SPEECH_INPUT_CHARS) throw invalidValue('instructions', `The instructions may be at most ${MAX_SPEECH_INPUT_CHARS} characters long.`);

  const streamFormat = optionalString(body, 'stream_format');
  if (streamFormat === 'sse') throw invalidRequest("service-test answers with the audio itself; stream_format 'sse' is not supported.", 'stream_format', 'unsupported_value');
  if (streamFormat !== undefined && streamFormat !== 'audio') throw invalidValue('stream_format', "stream_format must be 'audio' or 'sse'.");
  return { input, voice, speed, instructions, format };
}

function isOneOf<T extends string>(value: string, allowed: readonly T[]): value is T {
  return (allowed as readonly string[]).includes(value);
}

/** A voice is a name ('alloy', …) or, as the SDK allows, a custom voice object {id}. */
function voiceOf(voice: unknown): string {
  if (voice === undefined || voice === '') throw missingParam('voice');
  if (typeof voice === 'string') return voice;
  if (isObject(voice) && typeof voice.id === 'string' && voice.id !== '') return voice.id;
  throw invalidType('voice', "a string (a voice name such as 'alloy') or an object {id}");
}

export type TranscriptFormat = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';
export type AudioTask = 'transcribe' | 'translate';
const TRANSCRIPT_FORMATS: readonly TranscriptFormat[] = ['json', 'text', 'srt', 'verbose_json', 'vtt'];

const TRANSCRIPTION_FIELDS = new Set([
  'model', 'response_format', 'language', 'prompt', 'temperature', 'timestamp_granularities[]', 'timestamp_granularities', 'stream', 'chunking_strategy',
  // Accepted and ignored (docs/service-test.md): logprobs and speaker names change nothing in a silent transcript.
  'include', 'include[]', 'known_speaker_names', 'known_speaker_names[]', 'known_speaker_references', 'known_speaker_references[]',
  // keywords only steer a real model's wording (like prompt); languages are checked as ISO-639-1 codes.
  'keywords', 'keywords[]', 'languages', 'languages[]',
]);
const TRANSLATION_FIELDS = new Set(['model', 'response_format', 'prompt', 'temperature']);

export interface TranscriptionRequest {
  task: AudioTask;
  format: TranscriptFormat;
  /** ISO-639-1 code the client named, if any. */
  language: string | null;
  temperature: number;
  words: boolean;
}

export function readTranscriptionParams(fields: Map<string, string[]>, task: AudioTask): TranscriptionRequest {
  const known = task === 'transcribe' ? TRANSCRIPTION_FIELDS : TRANSLATION_FIELDS;
  for (const name of fields.keys()) {
    if (name === 'file') throw invalidType('file', 'a file (send it as a file part, e.g. with toFile or fs.createReadStream)');
    if (task === 'transcribe' && name.startsWith('chunking_strategy[')) {
      throw invalidRequest("service-test transcribes a file as one block; chunking_strategy may only be 'auto'.", 'chunking_strategy', 'unsupported_value');
    }
    if (!known.has(name)) throw unknownParam(name);
  }
  const value = (name: string) => fields.get(name)?.at(-1);

  const format = value('response_format') ?? 'json';
  if (!isOneOf(format, TRANSCRIPT_FORMATS)) {
    const supported = TRANSCRIPT_FORMATS.map((f) => `'${f}'`).join(', ');
    if (format === 'diarized_json') throw invalidRequest(`service-test does not tell speakers apart; response_format must be one of ${supported}.`, 'response_format', 'unsupported_value');
    throw invalidValue('response_format', `Invalid response_format '${format}'; one of ${supported}.`);
  }

  const language = value('language') ?? null;
  if (language !== null && !/^[a-z]{2}$/.test(language)) throw invalidValue('language', `Invalid language '${language}': use an ISO-639-1 code such as 'en' or 'de'.`);

  for (const candidate of [...(fields.get('languages[]') ?? []), ...(fields.get('languages') ?? [])]) {
    if (!/^[a-z]{2}$/.test(candidate)) throw invalidValue('languages', `Invalid language '${candidate}' in languages: use ISO-639-1 codes such as 'en' or 'de'.`);
  }

  const temperatureText = value('temperature');
  const temperature = temperatureText === undefined ? 0 : Number(temperatureText);
  if (temperatureText !== undefined && (temperatureText.trim() === '' || !Number.isFinite(temperature))) throw invalidType('temperature', 'a number');
  if (temperature < 0 || temperature > 1) throw invalidValue('temperature', `Invalid temperature ${temperature}: it must be between 0 and 1.`);

  const granularities = [...(fields.get('timestamp_granularities[]') ?? []), ...(fields.get('timestamp_granularities') ?? [])];
  for (const granularity of granularities) {
    if (granularity !== 'word' && granularity !== 'segment') throw invalidValue('timestamp_granularities', `Invalid timestamp granularity '${granularity}'; use 'word' and/or 'segment'.`);
  }
  if (granularities.length > 0 && format !== 'verbose_json') {
    throw invalidValue('timestamp_granularities', "timestamp_granularities needs response_format 'verbose_json'.");
  }

  const stream = value('stream');
  if (stream === 'true') throw invalidRequest('service-test does not stream transcriptions; leave stream unset or false.', 'stream', 'unsupported_value');
  if (stream !== undefined && stream !== 'false') throw invalidType('stream', 'a boolean');
  const chunking = value('chunking_strategy');
  if (chunking !== undefined && chunking !== 'auto') throw invalidValue('chunking_strategy', "chunking_strategy must be 'auto' or a server_vad object (service-test supports 'auto').");

  // `prompt` only steers a real model's wording; service-test hears what it hears.
  return { task, format, language, temperature, words: granularities.includes('word') };
}
