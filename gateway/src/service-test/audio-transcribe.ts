// What service-test "hears" in an uploaded file, and the transcript in each response_format. It
// recognises the speech it synthesised (the text travels in the WAV), describes any other WAV by its
// header, and any other file by its name, type and size: deterministic, and honest about it.
import { deflateSync } from 'node:zlib';
import { seedOf, seededRandom } from './deterministic.ts';
import { spokenTextOf } from './audio.ts';
import { readWav } from './audio-wav.ts';
import type { TranscriptionRequest } from './audio-params.ts';
import { encodeTokens } from './tokens.ts';

export interface UploadedAudio {
  bytes: Buffer;
  filename: string;
  mimeType: string;
}

export interface HeardAudio {
  text: string;
  durationSeconds: number;
  /** True for service-test's own speech; everything else is a description, not speech. */
  recognised: boolean;
}

/** For files it cannot decode, the duration is estimated as if they were 128 kbit/s audio (a common MP3 rate). */
const ASSUMED_BITS_PER_SECOND = 128_000;

export function hear(file: UploadedAudio): HeardAudio {
  const wav = readWav(file.bytes);
  if (wav) {
    const spoken = spokenTextOf(wav);
    if (spoken !== null) return { text: spoken, durationSeconds: wav.durationSeconds, recognised: true };
    const channels = wav.channels === 1 ? 'mono' : wav.channels === 2 ? 'stereo' : `${wav.channels} channels`;
    return {
      text: `A ${wav.durationSeconds.toFixed(2)} second WAV recording (${wav.sampleRate} Hz, ${channels}, ${wav.bitsPerSample}-bit). service-test recognises only the speech it synthesised itself.`,
      durationSeconds: wav.durationSeconds,
      recognised: false,
    };
  }
  const name = file.filename.replace(/[\p{Cc}]+/gu, ' ');
  return {
    text: `A file named '${name}' (${file.mimeType}, ${file.bytes.length} bytes) that service-test cannot decode. It transcribes WAV audio, and recognises the speech it synthesised itself.`,
    durationSeconds: (file.bytes.length * 8) / ASSUMED_BITS_PER_SECOND,
    recognised: false,
  };
}

export interface Transcript {
  contentType: 'application/json' | 'text/plain';
  body: string | Record<string, unknown>;
}

export function renderTranscript(heard: HeardAudio, request: TranscriptionRequest): Transcript {
  const timeline = new Timeline(heard.text, heard.durationSeconds);
  const segments = sentencesOf(heard.text).map((sentence, id) => segmentOf(sentence, id, timeline, heard, request));
  // Transcriptions report the audio's duration as usage; translations report none (OpenAI's spec and SDK).
  const usage = request.task === 'transcribe' ? { usage: { type: 'duration', seconds: Math.ceil(heard.durationSeconds) } } : {};
  switch (request.format) {
    case 'json':
      return { contentType: 'application/json', body: { text: heard.text, ...usage } };
    case 'text':
      return { contentType: 'text/plain', body: `${heard.text}\n` };
    case 'srt':
      return { contentType: 'text/plain', body: segments.map((s) => `${s.id + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${cueText(s.text)}\n\n`).join('') };
    case 'vtt':
      return { contentType: 'text/plain', body: `WEBVTT\n\n${segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${cueText(s.text)}\n\n`).join('')}` };
    case 'verbose_json':
      return {
        contentType: 'application/json',
        body: {
          task: request.task,
          // Whisper names the language in full; a translation is always into English.
          language: request.task === 'translate' ? 'english' : languageName(request.language ?? 'en'),
          duration: round(heard.durationSeconds),
          text: heard.text,
          segments,
          ...(request.words ? { words: wordsOf(heard.text, timeline) } : {}),
          ...usage,
        },
      };
  }
}

/** Maps positions in the text to times: service-test speaks every character for the same time. */
class Timeline {
  private readonly codePointIndex: Uint32Array;
  private readonly secondsPerCodePoint: number;

  constructor(text: string, durationSeconds: number) {
    this.codePointIndex = new Uint32Array(text.length + 1);
    let codePoints = 0;
    for (let i = 0; i < text.length; codePoints++) {
      // Both halves of a surrogate pair belong to one code point, i.e. one spoken character.
      const width = text.codePointAt(i)! > 0xffff ? 2 : 1;
      this.codePointIndex.fill(codePoints, i, i + width);
      i += width;
    }
    this.codePointIndex[text.length] = codePoints;
    this.secondsPerCodePoint = codePoints === 0 ? 0 : durationSeconds / codePoints;
  }

  /** Seconds at a UTF-16 index of the text. */
  at(index: number): number {
    return round(this.codePointIndex[index] * this.secondsPerCodePoint);
  }
}

interface Span {
  text: string;
  start: number;
  end: number;
}

/** Sentences end at . ! ? followed by a space or the end, so "2.50" or "e.g" stay whole. */
function sentencesOf(text: string): Span[] {
  return [...text.matchAll(/\S[\s\S]*?(?:[.!?]+(?=\s|$)|$)/gu)].map((m) => {
    const sentence = m[0].trimEnd();
    return { text: sentence, start: m.index, end: m.index + sentence.length };
  });
}

function segmentOf(sentence: Span, id: number, timeline: Timeline, heard: HeardAudio, request: TranscriptionRequest) {
  const start = timeline.at(sentence.start);
  const random = seededRandom(seedOf(`segment\n${id}\n${sentence.text}`));
  return {
    id,
    // Whisper decodes in 30-second windows; seek is the window's offset in 10 ms frames.
    seek: Math.floor(start / 30) * 3000,
    start,
    end: timeline.at(sentence.end),
    text: sentence.text,
    tokens: encodeTokens(sentence.text),
    temperature: request.temperature,
    avg_logprob: round(-(0.05 + 0.3 * random()), 6),
    compression_ratio: round(Buffer.byteLength(sentence.text) / deflateSync(sentence.text).length, 6),
    no_speech_prob: round(heard.recognised ? 0.001 + 0.02 * random() : 0.6 + 0.3 * random(), 6),
  };
}

function wordsOf(text: string, timeline: Timeline) {
  const words = [];
  for (const match of text.matchAll(/\S+/gu)) {
    const word = match[0].replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
    if (word === '') continue;
    words.push({ word, start: timeline.at(match.index), end: timeline.at(match.index + match[0].length) });
  }
  return words;
}

/** A cue is one block of lines: blank lines would end it early, and "-->" would read as a timing line. */
function cueText(text: string): string {
  return text.replace(/\s+/gu, ' ').replaceAll('-->', '->').trim();
}

/** HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT). */
function clock(seconds: number, separator: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const pad = (value: number, width = 2) => String(value).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

const LANGUAGE_NAMES: Record<string, string> = {
  en: 'english', de: 'german', fr: 'french', es: 'spanish', it: 'italian', pt: 'portuguese', nl: 'dutch', ru: 'russian', uk: 'ukrainian', pl: 'polish',
  cs: 'czech', sv: 'swedish', da: 'danish', no: 'norwegian', fi: 'finnish', tr: 'turkish', el: 'greek', ar: 'arabic', he: 'hebrew', hi: 'hindi',
  zh: 'chinese', ja: 'japanese', ko: 'korean', vi: 'vietnamese', th: 'thai', id: 'indonesian',
};

function languageName(code: string): string {
  return LANGUAGE_NAMES[code] ?? code;
}
