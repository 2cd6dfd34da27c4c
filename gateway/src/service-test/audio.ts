// service-test's speech: real 16-bit 24 kHz mono audio, one short tone per character (silence for
// spaces and punctuation), so its length follows the text and the speed as real speech would. The
// WAV form carries the text in a LIST/INFO chunk, which lets a transcription of service-test's own
// speech return exactly what was said: a genuine round trip a client can test end to end.
import { seedOf } from './deterministic.ts';
import { BITS_PER_SAMPLE, SAMPLE_RATE, wavHeader, type WavFacts } from './audio-wav.ts';

/** 60 ms a character at speed 1: about 16 characters a second, near a calm speaking pace. */
export const SAMPLES_PER_CHARACTER = (SAMPLE_RATE * 60) / 1000;
/** The INFO software tag that marks a WAV as service-test's own speech. */
export const SPEECH_SOFTWARE = 'Tollgate service-test speech';

const BYTES_PER_SAMPLE = BITS_PER_SAMPLE / 8;
const AMPLITUDE = 0.3 * 32767;
/** 5 ms fades at both ends of every tone: without them each tone starts and stops with a click. */
const FADE_SAMPLES = (SAMPLE_RATE * 5) / 1000;
const CHUNK_SAMPLES = 32 * 1024;

export type SpeechFormat = 'wav' | 'pcm';

export interface SpeechOptions {
  input: string;
  voice: string;
  speed: number;
  instructions: string | null;
}

export interface SpeechAudio {
  contentType: string;
  byteLength: number;
  /** Generated lazily: a long text at speed 0.25 is tens of megabytes that need not sit in memory. */
  chunks: Iterable<Buffer>;
}

export function speechSampleCount(input: string, speed: number): number {
  return Math.round((Array.from(input).length * SAMPLES_PER_CHARACTER) / speed);
}

export function synthesizeSpeech(options: SpeechOptions, format: SpeechFormat): SpeechAudio {
  const dataBytes = speechSampleCount(options.input, options.speed) * BYTES_PER_SAMPLE;
  if (format === 'pcm') return { contentType: 'audio/pcm', byteLength: dataBytes, chunks: pcmChunks(options) };
  const header = wavHeader(dataBytes, [
    ['ISFT', SPEECH_SOFTWARE],
    ['IART', options.voice],
    ['ICMT', options.input],
  ]);
  return {
    contentType: 'audio/wav',
    byteLength: header.length + dataBytes,
    chunks: (function* () {
      yield header;
      yield* pcmChunks(options);
    })(),
  };
}

/** The text service-test spoke into this WAV, or null when someone else made it. */
export function spokenTextOf(wav: WavFacts): string | null {
  return wav.info.get('ISFT') === SPEECH_SOFTWARE ? (wav.info.get('ICMT') ?? '') : null;
}

/** Raw PCM, 16-bit little-endian: what OpenAI's response_format=pcm returns. */
function* pcmChunks(options: SpeechOptions): Generator<Buffer> {
  const characters = Array.from(options.input);
  // Each voice (and each set of instructions) speaks at its own pitch, between 110 and 220 Hz.
  const basePitch = 110 + (seedOf(`${options.voice}\n${options.instructions ?? ''}`) % 111);
  let chunk = Buffer.alloc(CHUNK_SAMPLES * BYTES_PER_SAMPLE);
  let used = 0;
  for (let i = 0; i < characters.length; i++) {
    // Boundaries from the running total, so the whole length is exactly speechSampleCount.
    const start = Math.round((i * SAMPLES_PER_CHARACTER) / options.speed);
    const end = Math.round(((i + 1) * SAMPLES_PER_CHARACTER) / options.speed);
    const length = end - start;
    const frequency = toneOf(characters[i], basePitch);
    const fade = Math.min(FADE_SAMPLES, Math.floor(length / 4));
    for (let k = 0; k < length; k++) {
      let sample = 0;
      if (frequency > 0) {
        const envelope = k < fade ? fadeCurve(k / fade) : k >= length - fade ? fadeCurve((length - 1 - k) / fade) : 1;
        const phase = (2 * Math.PI * frequency * k) / SAMPLE_RATE;
        sample = Math.round(AMPLITUDE * envelope * (0.8 * Math.sin(phase) + 0.2 * Math.sin(2 * phase)));
      }
      chunk.writeInt16LE(sample, used * BYTES_PER_SAMPLE);
      if (++used === CHUNK_SAMPLES) {
        yield chunk;
        chunk = Buffer.alloc(CHUNK_SAMPLES * BYTES_PER_SAMPLE);
        used = 0;
      }
    }
  }
  if (used > 0) yield chunk.subarray(0, used * BYTES_PER_SAMPLE);
}

/** Letters and digits sound, over two octaves above the voice's pitch; everything else is a pause. */
function toneOf(character: string, basePitch: number): number {
  if (!/[\p{L}\p{N}]/u.test(character)) return 0;
  return basePitch * 2 ** ((character.codePointAt(0)! % 24) / 12);
}

function fadeCurve(position: number): number {
  return 0.5 - 0.5 * Math.cos(Math.PI * position);
}
