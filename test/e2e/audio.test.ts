import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const free = newKey('free-key', 'free-co');
const paid = newKey('paid-key', 'paid-co');
const manifests = [
  upstream('openai', 'https://api.openai.com/v1'),
  model('tts-1', [{ upstream: 'openai' }]),
  model('whisper-1', [{ upstream: 'openai' }]),
  plan('pro', ['tts-1', 'whisper-1']),
  account('free-co'),
  account('paid-co', 'pro'),
  apiKey(free),
  apiKey(paid),
];
const BODY_LIMIT = 1024 * 1024;
const SAMPLE_RATE = 24000;
/** service-test speaks 60 ms per character at speed 1. */
const SAMPLES_PER_CHARACTER = 1440;

interface ParsedWav {
  chunkIds: string[];
  riffSize: number;
  format: { audioFormat: number; channels: number; sampleRate: number; byteRate: number; blockAlign: number; bitsPerSample: number };
  data: Buffer;
  info: Map<string, string>;
}

/** An independent RIFF reader, so the gateway's own parser is not what checks its output. */
function parseWav(bytes: Buffer): ParsedWav {
  expect(bytes.toString('latin1', 0, 4)).toBe('RIFF');
  expect(bytes.toString('latin1', 8, 12)).toBe('WAVE');
  const chunkIds: string[] = [];
  const info = new Map<string, string>();
  let format: ParsedWav['format'] | undefined;
  let data: Buffer | undefined;
  for (let offset = 12; offset < bytes.length; ) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const body = bytes.subarray(offset + 8, offset + 8 + size);
    expect(body.length).toBe(size);
    chunkIds.push(id);
    if (id === 'fmt ') {
      format = { audioFormat: body.readUInt16LE(0), channels: body.readUInt16LE(2), sampleRate: body.readUInt32LE(4), byteRate: body.readUInt32LE(8), blockAlign: body.readUInt16LE(12), bitsPerSample: body.readUInt16LE(14) };
    }
    if (id === 'data') data = body;
    if (id === 'LIST') {
      expect(body.toString('latin1', 0, 4)).toBe('INFO');
      for (let at = 4; at < body.length; ) {
        const sub = body.readUInt32LE(at + 4);
        info.set(body.toString('latin1', at, at + 4), body.toString('utf8', at + 8, at + 8 + sub).replace(/\0+$/, ''));
        at += 8 + sub + (sub % 2);
      }
    }
    offset += 8 + size + (size % 2);
  }
  return { chunkIds, riffSize: bytes.readUInt32LE(4), format: format!, data: data!, info };
}

/** A plain 16-bit PCM WAV as any recorder would write it (no INFO chunk). */
function foreignWav(seconds: number, sampleRate: number, channels: number): Buffer {
  const dataBytes = Math.round(seconds * sampleRate) * channels * 2;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  return Buffer.concat([header, Buffer.alloc(dataBytes)]);
}

async function speak(client: OpenAI, body: Partial<OpenAI.Audio.SpeechCreateParams>): Promise<Buffer> {
  const response = await client.audio.speech.create({ model: 'service-test', voice: 'alloy', input: 'Hello there.', ...body } as OpenAI.Audio.SpeechCreateParams);
  return Buffer.from(await response.arrayBuffer());
}

async function postForm(gw: TestGateway, pathname: string, fields: Record<string, string | string[]>, files: Array<[string, Buffer | string, string, string?]>, key = free.key) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) form.append(name, v);
  for (const [name, bytes, filename, type] of files) form.append(name, new Blob([typeof bytes === 'string' ? bytes : new Uint8Array(bytes)], { type: type ?? 'audio/wav' }), filename);
  return raw(gw, 'POST', pathname, { key, body: form });
}

function parseCues(text: string, separator: ',' | '.') {
  const time = (t: string) => {
    const [h, m, s] = t.replace(separator, '.').split(':');
    return Number(h) * 3600 + Number(m) * 60 + Number(s);
  };
  const stamp = separator === ',' ? '\\d{2}:\\d{2}:\\d{2},\\d{3}' : '\\d{2}:\\d{2}:\\d{2}\\.\\d{3}';
  const blocks = text.replace(/\n+$/, '').split('\n\n');
  return blocks.map((block) => {
    const match = new RegExp(`^${separator === ',' ? '(\\d+)\\n' : '()'}(${stamp}) --> (${stamp})\\n([^\\n]+)$`).exec(block);
    expect(match, `malformed cue: ${JSON.stringify(block)}`).not.toBeNull();
    return { index: match![1], start: time(match![2]), end: time(match![3]), text: match![4] };
  });
}

describe('service-test speech', () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway(manifests, { maxBodyBytes: BODY_LIMIT });
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  it('wav: a correct RIFF header, 16-bit mono 24 kHz PCM, the text in LIST/INFO, length from the text', async () => {
    const input = 'The quick brown fox jumps over the lazy dog.';
    const { data: response, response: http } = await client.audio.speech.create({ model: 'service-test', voice: 'alloy', input, response_format: 'wav' }).withResponse();
    expect(http.headers.get('content-type')).toBe('audio/wav');
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(Number(http.headers.get('content-length'))).toBe(bytes.length);
    const wav = parseWav(bytes);
    expect(wav.riffSize).toBe(bytes.length - 8);
    expect(wav.chunkIds).toEqual(['fmt ', 'LIST', 'data']);
    expect(wav.format).toEqual({ audioFormat: 1, channels: 1, sampleRate: 24000, byteRate: 48000, blockAlign: 2, bitsPerSample: 16 });
    expect(wav.data.length).toBe(input.length * SAMPLES_PER_CHARACTER * 2);
    expect(wav.info.get('ICMT')).toBe(input);
    // Real sound, not silence: tones for letters, quiet for the spaces between them.
    let loudest = 0;
    for (let i = 0; i < wav.data.length; i += 2) loudest = Math.max(loudest, Math.abs(wav.data.readInt16LE(i)));
    expect(loudest).toBeGreaterThan(5000);
    const spaceStart = input.indexOf(' ') * SAMPLES_PER_CHARACTER * 2;
    expect(wav.data.subarray(spaceStart, spaceStart + SAMPLES_PER_CHARACTER * 2).every((b) => b === 0)).toBe(true);
  });

  it('without response_format the answer is WAV (service-test cannot encode the mp3 default)', async () => {
    const response = await raw(gw, 'POST', '/v1/audio/speech', { key: free.key, body: { model: 'service-test', voice: 'nova', input: 'Default.' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('audio/wav');
  });

  it('duration is divided by speed', async () => {
    const input = 'Speed changes the duration.';
    const durations = [];
    for (const speed of [0.25, 0.5, 1, 2, 4]) {
      const wav = parseWav(await speak(client, { input, speed }));
      expect(wav.data.length / 2).toBe(Math.round((input.length * SAMPLES_PER_CHARACTER) / speed));
      durations.push(wav.data.length / 2 / SAMPLE_RATE);
    }
    expect(durations[2]).toBeCloseTo(input.length * 0.06, 6);
    expect(durations[0] / durations[2]).toBeCloseTo(4, 3);
    expect(durations[2] / durations[4]).toBeCloseTo(4, 3);
    const odd = parseWav(await speak(client, { input, speed: 1.3 }));
    expect(odd.data.length / 2).toBe(Math.round((input.length * SAMPLES_PER_CHARACTER) / 1.3));
  });

  it('pcm: raw 16-bit samples, the same as the WAV data, with content type audio/pcm', async () => {
    const input = 'Raw samples, please.';
    const { data: response, response: http } = await client.audio.speech.create({ model: 'service-test', voice: 'echo', input, response_format: 'pcm', speed: 1.5 }).withResponse();
    expect(http.headers.get('content-type')).toBe('audio/pcm');
    const pcm = Buffer.from(await response.arrayBuffer());
    expect(pcm.length).toBe(Math.round((input.length * SAMPLES_PER_CHARACTER) / 1.5) * 2);
    expect(pcm.subarray(0, 4).toString('latin1')).not.toBe('RIFF');
    const wav = parseWav(await speak(client, { input, voice: 'echo', speed: 1.5 }));
    expect(pcm.equals(wav.data)).toBe(true);
  });

  it('is deterministic; the voice changes the sound but not the length', async () => {
    const first = await speak(client, { input: 'Same words twice.', voice: 'alloy' });
    const second = await speak(client, { input: 'Same words twice.', voice: 'alloy' });
    expect(second.equals(first)).toBe(true);
    const other = parseWav(await speak(client, { input: 'Same words twice.', voice: 'shimmer' }));
    expect(other.data.length).toBe(parseWav(first).data.length);
    expect(other.data.equals(parseWav(first).data)).toBe(false);
    const custom = parseWav(await speak(client, { input: 'Same words twice.', voice: { id: 'voice_custom_1' } }));
    expect(custom.info.get('IART')).toBe('voice_custom_1');
  });

  it('counts characters, not UTF-16 units, and keeps non-ASCII text intact', async () => {
    const input = 'Grüße 👋 世界';
    const wav = parseWav(await speak(client, { input }));
    expect(wav.data.length / 2).toBe(Array.from(input).length * SAMPLES_PER_CHARACTER);
    expect(wav.info.get('ICMT')).toBe(input);
  });

  it('mp3, opus, aac and flac: 400 unsupported_value naming what service-test can make', async () => {
    for (const format of ['mp3', 'opus', 'aac', 'flac'] as const) {
      const error = await client.audio.speech.create({ model: 'service-test', voice: 'alloy', input: 'x', response_format: format }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.status).toBe(400);
      expect(error.param).toBe('response_format');
      expect(error.code).toBe('unsupported_value');
      expect(error.message).toContain("'wav'");
      expect(error.message).toContain("'pcm'");
    }
  });

  const valid = { model: 'service-test', voice: 'alloy', input: 'Hi.' };
  it.each([
    ['missing input', { model: 'service-test', voice: 'alloy' }, 'input', 'missing_required_parameter'],
    ['input not a string', { ...valid, input: ['a'] }, 'input', 'invalid_type'],
    ['empty input', { ...valid, input: '' }, 'input', 'invalid_value'],
    ['input over 4096 characters', { ...valid, input: 'a'.repeat(4097) }, 'input', 'invalid_value'],
    ['missing voice', { model: 'service-test', input: 'x' }, 'voice', 'missing_required_parameter'],
    ['voice a number', { ...valid, voice: 3 }, 'voice', 'invalid_type'],
    ['speed too low', { ...valid, speed: 0.24 }, 'speed', 'invalid_value'],
    ['speed too high', { ...valid, speed: 4.01 }, 'speed', 'invalid_value'],
    ['speed as text', { ...valid, speed: 'fast' }, 'speed', 'invalid_type'],
    ['unknown format', { ...valid, response_format: 'ogg' }, 'response_format', 'invalid_value'],
    ['stream_format sse', { ...valid, stream_format: 'sse' }, 'stream_format', 'unsupported_value'],
    ['instructions not a string', { ...valid, instructions: 5 }, 'instructions', 'invalid_type'],
    ['unknown parameter', { ...valid, pitch: 2 }, 'pitch', 'unknown_parameter'],
    ['missing model', { voice: 'alloy', input: 'x' }, 'model', 'missing_required_parameter'],
    ['unknown model', { ...valid, model: 'tts-9' }, 'model', 'model_not_found'],
  ])('speech 400: %s', async (_label, body, param, code) => {
    const error = expectErrorShape(await raw(gw, 'POST', '/v1/audio/speech', { key: free.key, body }), 400, code);
    expect(error.param).toBe(param);
  });

  it('accepts input of exactly 4096 characters', async () => {
    const response = await raw(gw, 'POST', '/v1/audio/speech', { key: free.key, body: { ...valid, input: 'b'.repeat(4096), response_format: 'pcm', speed: 4 } });
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('content-length'))).toBe(4096 * (SAMPLES_PER_CHARACTER / 4) * 2);
  });

  it('speech: 402 outside the plan; an upstream model goes to the proxy (no credential configured here: 502)', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/audio/speech', { key: free.key, body: { ...valid, model: 'tts-1' } }), 402, 'subscription_required');
    expectErrorShape(await raw(gw, 'POST', '/v1/audio/speech', { key: paid.key, body: { ...valid, model: 'tts-1' } }), 502, 'upstream_credentials_missing');
  });
});

describe('service-test transcriptions and translations', () => {
  let gw: TestGateway;
  let client: OpenAI;
  const spoken = 'Hello from Tollgate. This is a round trip! Does it work? Yes.';
  let speech: Buffer;
  beforeAll(async () => {
    gw = await startTestGateway(manifests, { maxBodyBytes: BODY_LIMIT });
    client = gw.client(free.key);
    speech = await speak(client, { input: spoken, response_format: 'wav' });
  });
  afterAll(() => gw.stop());

  const file = (bytes: Buffer, name = 'speech.wav', type = 'audio/wav') => toFile(bytes, name, { type });

  it("round trip: transcribing service-test's own speech returns the input text", async () => {
    const result = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech) });
    expect(result.text).toBe(spoken);
    const unicode = 'Grüße aus Köln 👋 — 世界.';
    const again = await client.audio.transcriptions.create({ model: 'service-test', file: await file(await speak(client, { input: unicode })) });
    expect(again.text).toBe(unicode);
  });

  it('keywords and languages (as the SDK sends them) are accepted and change nothing', async () => {
    const result = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), keywords: ['Tollgate', 'round trip'], languages: ['en', 'de'] });
    expect(result.text).toBe(spoken);
  });

  it('text: the plain text with a text/plain content type', async () => {
    const { data, response } = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), response_format: 'text' }).withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(data).toBe(`${spoken}\n`);
  });

  it('verbose_json: task, language, duration and consistent segments (words on request)', async () => {
    const duration = (spoken.length * SAMPLES_PER_CHARACTER) / SAMPLE_RATE;
    const result = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), response_format: 'verbose_json', language: 'de', temperature: 0.2 });
    expect(result).toMatchObject({ task: 'transcribe', language: 'german', text: spoken });
    expect(result.duration).toBeCloseTo(duration, 3);
    expect(result.words).toBeUndefined();
    const segments = result.segments!;
    expect(segments.map((s) => s.text)).toEqual(['Hello from Tollgate.', 'This is a round trip!', 'Does it work?', 'Yes.']);
    expect(segments.map((s) => s.id)).toEqual([0, 1, 2, 3]);
    expect(segments[0].start).toBe(0);
    expect(segments.at(-1)!.end).toBeCloseTo(duration, 3);
    for (const [i, s] of segments.entries()) {
      expect(s.end).toBeGreaterThan(s.start);
      if (i > 0) expect(s.start).toBeGreaterThanOrEqual(segments[i - 1].end);
      expect(s.temperature).toBe(0.2);
      expect(s.tokens.length).toBeGreaterThan(0);
      expect(s.tokens.every((t) => Number.isInteger(t))).toBe(true);
      expect(s.avg_logprob).toBeLessThan(0);
      expect(s.compression_ratio).toBeGreaterThan(0);
      expect(s.no_speech_prob).toBeGreaterThanOrEqual(0);
      expect(s.no_speech_prob).toBeLessThan(0.1);
      expect(s.seek).toBe(0);
    }
    // A sentence starts when its first character is spoken: 60 ms per character.
    expect(segments[1].start).toBeCloseTo(spoken.indexOf('This') * 0.06, 3);

    const withWords = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'] });
    expect(withWords.language).toBe('english');
    expect(withWords.words!.map((w) => w.word)).toEqual(['Hello', 'from', 'Tollgate', 'This', 'is', 'a', 'round', 'trip', 'Does', 'it', 'work', 'Yes']);
    expect(withWords.words![1].start).toBeCloseTo(6 * 0.06, 3);
    expect(withWords.words![1].end).toBeCloseTo(10 * 0.06, 3);
  });

  it('srt: numbered cues with comma timestamps, one per sentence', async () => {
    const { data, response } = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), response_format: 'srt' }).withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(data.endsWith('\n\n')).toBe(true);
    const cues = parseCues(data, ',');
    expect(cues.map((c) => c.index)).toEqual(['1', '2', '3', '4']);
    expect(cues.map((c) => c.text).join(' ')).toBe(spoken);
    expect(cues[0].start).toBe(0);
    expect(cues[3].end).toBeCloseTo((spoken.length * SAMPLES_PER_CHARACTER) / SAMPLE_RATE, 3);
    for (const [i, cue] of cues.entries()) if (i > 0) expect(cue.start).toBeGreaterThanOrEqual(cues[i - 1].end);
  });

  it('vtt: a WEBVTT header and cues with dot timestamps', async () => {
    const { data, response } = await client.audio.transcriptions.create({ model: 'service-test', file: await file(speech), response_format: 'vtt' }).withResponse();
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(data.startsWith('WEBVTT\n\n')).toBe(true);
    const cues = parseCues(data.slice('WEBVTT\n\n'.length), '.');
    expect(cues.map((c) => c.text)).toEqual(['Hello from Tollgate.', 'This is a round trip!', 'Does it work?', 'Yes.']);
  });

  it('srt and vtt keep each cue on one line when the text has line breaks', async () => {
    const multiline = await speak(client, { input: 'First line\n\nsecond line --> third.' });
    const srt = await client.audio.transcriptions.create({ model: 'service-test', file: await file(multiline), response_format: 'srt' });
    expect(parseCues(srt, ',').map((c) => c.text)).toEqual(['First line second line -> third.']);
  });

  it('translations: every response format, task translate, language english', async () => {
    // The SDK's translation overloads do not narrow on response_format (its type parameter is
    // unused), so the answers are typed here by hand.
    const translate = (response_format?: 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt') =>
      file(speech).then((upload) => client.audio.translations.create({ model: 'service-test', file: upload, ...(response_format ? { response_format } : {}) }) as Promise<unknown>);
    const json = (await translate()) as OpenAI.Audio.Translation;
    // Only the text: a translation reports no usage, unlike a transcription.
    expect(json).toEqual({ text: spoken });
    const verbose = (await translate('verbose_json')) as OpenAI.Audio.TranslationVerbose;
    expect(verbose).toMatchObject({ task: 'translate', language: 'english', text: spoken });
    expect(verbose).not.toHaveProperty('usage');
    expect(verbose.segments).toHaveLength(4);
    expect(await translate('text')).toBe(`${spoken}\n`);
    expect(parseCues((await translate('srt')) as string, ',')).toHaveLength(4);
    const vtt = (await translate('vtt')) as string;
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    expect(parseCues(vtt.slice('WEBVTT\n\n'.length), '.')).toHaveLength(4);
  });

  it('another WAV is described by its header, with its real duration', async () => {
    const wav = foreignWav(1.5, 44100, 2);
    const result = await client.audio.transcriptions.create({ model: 'service-test', file: await file(wav, 'meeting.wav'), response_format: 'verbose_json' });
    expect(result.text).toContain('1.50 second WAV recording (44100 Hz, stereo, 16-bit)');
    expect(result.duration).toBeCloseTo(1.5, 3);
    expect(result.segments![0].no_speech_prob).toBeGreaterThan(0.5);
    const again = await client.audio.transcriptions.create({ model: 'service-test', file: await file(wav, 'meeting.wav'), response_format: 'verbose_json' });
    expect(again).toEqual(result);
  });

  it('any other file is described by name, type and size; files up to the body limit are accepted', async () => {
    const mp3 = Buffer.alloc(1000, 0xff);
    const small = await client.audio.transcriptions.create({ model: 'service-test', file: await file(mp3, 'notes.mp3', 'audio/mpeg') });
    expect(small.text).toContain("'notes.mp3' (audio/mpeg, 1000 bytes)");
    const large = Buffer.alloc(BODY_LIMIT - 4096, 1);
    const big = await client.audio.translations.create({ model: 'service-test', file: await file(large, 'long.m4a', 'audio/mp4') });
    expect(big.text).toContain(`(audio/mp4, ${large.length} bytes)`);
  });

  const speechPart = (): [string, Buffer, string] => ['file', speech, 'speech.wav'];
  it.each([
    ['missing file', '/v1/audio/transcriptions', { model: 'service-test' }, [], 'file', 'missing_required_parameter'],
    ['file as a text field', '/v1/audio/transcriptions', { model: 'service-test', file: 'speech.wav' }, [], 'file', 'invalid_type'],
    ['two files', '/v1/audio/transcriptions', { model: 'service-test' }, [speechPart, speechPart], 'file', 'invalid_value'],
    ['unknown response_format', '/v1/audio/transcriptions', { model: 'service-test', response_format: 'xml' }, [speechPart], 'response_format', 'invalid_value'],
    ['diarized_json', '/v1/audio/transcriptions', { model: 'service-test', response_format: 'diarized_json' }, [speechPart], 'response_format', 'unsupported_value'],
    ['granularities without verbose_json', '/v1/audio/transcriptions', { model: 'service-test', 'timestamp_granularities[]': 'word' }, [speechPart], 'timestamp_granularities', 'invalid_value'],
    ['unknown granularity', '/v1/audio/transcriptions', { model: 'service-test', response_format: 'verbose_json', 'timestamp_granularities[]': ['word', 'sentence'] }, [speechPart], 'timestamp_granularities', 'invalid_value'],
    ['temperature not a number', '/v1/audio/transcriptions', { model: 'service-test', temperature: 'hot' }, [speechPart], 'temperature', 'invalid_type'],
    ['temperature above 1', '/v1/audio/transcriptions', { model: 'service-test', temperature: '1.5' }, [speechPart], 'temperature', 'invalid_value'],
    ['language not ISO-639-1', '/v1/audio/transcriptions', { model: 'service-test', language: 'english' }, [speechPart], 'language', 'invalid_value'],
    ['languages not ISO-639-1', '/v1/audio/transcriptions', { model: 'service-test', 'languages[]': ['en', 'german'] }, [speechPart], 'languages', 'invalid_value'],
    ['stream true', '/v1/audio/transcriptions', { model: 'service-test', stream: 'true' }, [speechPart], 'stream', 'unsupported_value'],
    ['unknown field', '/v1/audio/transcriptions', { model: 'service-test', speaker: 'me' }, [speechPart], 'speaker', 'unknown_parameter'],
    ['unknown file part', '/v1/audio/transcriptions', { model: 'service-test' }, [speechPart, (): [string, Buffer, string] => ['extra', speech, 'x.wav']], 'extra', 'unknown_parameter'],
    ['missing model', '/v1/audio/transcriptions', {}, [speechPart], 'model', 'missing_required_parameter'],
    ['unknown model', '/v1/audio/transcriptions', { model: 'whisper-9' }, [speechPart], 'model', 'model_not_found'],
    ['translation with language', '/v1/audio/translations', { model: 'service-test', language: 'de' }, [speechPart], 'language', 'unknown_parameter'],
    ['translation with granularities', '/v1/audio/translations', { model: 'service-test', response_format: 'verbose_json', 'timestamp_granularities[]': 'word' }, [speechPart], 'timestamp_granularities[]', 'unknown_parameter'],
    ['translation without file', '/v1/audio/translations', { model: 'service-test' }, [], 'file', 'missing_required_parameter'],
  ] as Array<[string, string, Record<string, string | string[]>, Array<() => [string, Buffer, string]>, string, string]>)('%s: 400', async (_label, pathname, fields, parts, param, code) => {
    const response = await postForm(gw, pathname, fields, parts.map((part) => part()));
    const error = expectErrorShape(response, 400, code);
    expect(error.param).toBe(param);
  });

  it('JSON instead of multipart is 400; a body past the limit is 413; plan rules apply', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/audio/transcriptions', { key: free.key, body: { model: 'service-test' } }), 400, 'invalid_content_type');
    expectErrorShape(await postForm(gw, '/v1/audio/transcriptions', { model: 'service-test' }, [['file', Buffer.alloc(BODY_LIMIT + 1), 'big.wav']]), 413, 'request_too_large');
    expectErrorShape(await postForm(gw, '/v1/audio/transcriptions', { model: 'whisper-1' }, [['file', speech, 'speech.wav']]), 402, 'subscription_required');
    expectErrorShape(await postForm(gw, '/v1/audio/translations', { model: 'whisper-1' }, [['file', speech, 'speech.wav']], paid.key), 502, 'upstream_credentials_missing');
  });
});
