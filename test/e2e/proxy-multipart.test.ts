import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { peakLiveMemoryGrowth, postGeneratedForm, sha256, spoolEntries, until } from '../helpers/proxy-tools.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

const SECRET = 'sk-upstream-secret-multipart-0123456789';
process.env.TEST_UPSTREAM_KEY = SECRET;
const key = newKey('k', 'acme');
const MB = 1024 * 1024;

/** A few KB of audio-like bytes that no two tests share. */
const audioBytes = (seed: number, size = 48_000) => Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed) % 256));

describe('multipart requests relayed to upstream models', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  const manifests = (targets: Parameters<typeof model>[1]) => [
    upstream('a', a.url),
    upstream('b', b.url),
    model('whisper-1', targets),
    model('gpt-image-1', [{ upstream: 'a', model: 'fake-image' }]),
    plan('pro', ['whisper-1', 'gpt-image-1']),
    account('acme', 'pro'),
    apiKey(key),
  ];

  beforeAll(async () => {
    a = await startFakeUpstream('a');
    b = await startFakeUpstream('b');
    gw = await startTestGateway(manifests([{ upstream: 'a', model: 'fake-whisper' }]));
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw.stop();
    await a.close();
    await b.close();
  });
  afterEach(async () => {
    // Whatever the test did, nothing of the request may stay on disk.
    await until(async () => (await spoolEntries(gw)).length === 0, 'an empty spool');
    a.behave({});
    b.behave({});
    a.requests.length = 0;
    b.requests.length = 0;
  });

  it('transcribes through the SDK: model rewritten, credential swapped, file bytes intact', async () => {
    const audio = audioBytes(1);
    const { data, response } = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(audio, 'speech.wav', { type: 'audio/wav' }), language: 'en' }).withResponse();
    expect(data.text).toBe(`heard ${audio.length} bytes at a as fake-whisper`);
    const sent = a.requests[0];
    expect(sent.path).toBe('/v1/audio/transcriptions');
    expect(sent.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
    expect(sent.headers['x-service-request-id']).toBe(response.headers.get('x-service-request-id'));
    // undici sends the rebuilt form with an exact length, not chunked.
    expect(Number(sent.headers['content-length'])).toBe(sent.bytes);
    expect(sent.form!.fields).toMatchObject({ model: ['fake-whisper'], language: ['en'] });
    expect(sent.form!.files).toEqual([expect.objectContaining({ field: 'file', filename: 'speech.wav', mimeType: 'audio/wav', bytes: audio.length, sha256: sha256(audio) })]);
  });

  it('relays every response format as the upstream sent it, with its content type', async () => {
    const file = () => toFile(audioBytes(2), 'speech.wav', { type: 'audio/wav' });
    const text = await client.audio.transcriptions.create({ model: 'whisper-1', file: await file(), response_format: 'text' });
    expect(text).toBe(`heard 48000 bytes at a as fake-whisper`);
    const verbose = await client.audio.transcriptions.create({ model: 'whisper-1', file: await file(), response_format: 'verbose_json' });
    expect(verbose).toMatchObject({ task: 'transcribe', duration: 1.5 });
    for (const format of ['srt', 'vtt']) {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(audioBytes(3))], { type: 'audio/wav' }), 'speech.wav');
      form.append('model', 'whisper-1');
      form.append('response_format', format);
      const answer = await raw(gw, 'POST', '/v1/audio/translations', { key: key.key, body: form });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(answer.text).toContain(format === 'srt' ? '00:00:00,000 --> 00:00:01,500' : 'WEBVTT');
    }
    expect(a.requests.at(-1)!.path).toBe('/v1/audio/translations');
  });

  it('edits an image through the SDK with the model rewritten and every field and part kept in order', async () => {
    const png = audioBytes(4, 5000);
    const mask = audioBytes(5, 3000);
    const result = await client.images.edit({ model: 'gpt-image-1', prompt: 'add a hat', image: await toFile(png, 'in.png', { type: 'image/png' }), mask: await toFile(mask, 'mask.png', { type: 'image/png' }), size: '1024x1024' });
    expect(Buffer.from(result.data![0].b64_json!, 'base64').toString()).toBe('edited by a as fake-image');
    const sent = a.requests[0];
    expect(sent.path).toBe('/v1/images/edits');
    expect(sent.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(sent.form!.fields).toMatchObject({ model: ['fake-image'], prompt: ['add a hat'], size: ['1024x1024'] });
    expect(sent.form!.files.map((f) => [f.field, f.bytes, f.sha256])).toEqual([
      ['image', png.length, sha256(png)],
      ['mask', mask.length, sha256(mask)],
    ]);
  });

  it('falls back on a 5xx with the form rebuilt for the next target', async () => {
    await gw.writeManifests(manifests([{ upstream: 'a', model: 'fake-whisper', priority: 0 }, { upstream: 'b', model: 'other-whisper', priority: 1 }]));
    a.behave({ status: 503 });
    const audio = audioBytes(6, 300_000);
    const result = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(audio, 'speech.wav', { type: 'audio/wav' }) });
    expect(result.text).toBe(`heard ${audio.length} bytes at b as other-whisper`);
    const [first, second] = [a.requests[0], b.requests[0]];
    expect(first.form!.files[0]).toMatchObject({ bytes: audio.length, sha256: sha256(audio) });
    expect(second.form!.files[0]).toMatchObject({ bytes: audio.length, sha256: sha256(audio) });
    expect([first.form!.fields.model, second.form!.fields.model]).toEqual([['fake-whisper'], ['other-whisper']]);
    await gw.writeManifests(manifests([{ upstream: 'a', model: 'fake-whisper' }]));
  });

  it('relays upstream errors in the OpenAI shape, and the spool is emptied on that path too', async () => {
    a.behave({ status: 400 });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(audioBytes(7))]), 'speech.wav');
    form.append('model', 'whisper-1');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/audio/transcriptions', { key: key.key, body: form }), 400).message).toBe('fake upstream says 400');
  });

  it('relays a ~45 MB form whose model comes after the file, holding far less than that in memory', async () => {
    const size = 45 * MB;
    const { result: upload, peakBytes } = await peakLiveMemoryGrowth(() => postGeneratedForm(`${gw.url}/v1/audio/transcriptions`, key.key, size, { model: 'whisper-1', response_format: 'json' }));
    expect(upload.status, upload.text).toBe(200);
    expect(JSON.parse(upload.text).text).toBe(`heard ${size} bytes at a as fake-whisper`);
    const received = a.requests[0].form!.files[0];
    expect(received).toMatchObject({ bytes: size, sha256: upload.sha256() });
    // Client, gateway and fake upstream all live in this process: whatever any of them held at once
    // counts here. Spooling and streaming keep that to a few MB of buffers; holding the body would be 45.
    expect(peakBytes).toBeLessThan(8 * MB);
  });

  it('answers 413 to a form past 50 MB, declared or not, sends nothing upstream and keeps nothing', async () => {
    const undeclared = await postGeneratedForm(`${gw.url}/v1/audio/transcriptions`, key.key, 51 * MB, { model: 'whisper-1' }, { declareLength: false });
    expect(undeclared.status).toBe(413);
    expect(JSON.parse(undeclared.text).error.code).toBe('request_too_large');
    const declared = await postGeneratedForm(`${gw.url}/v1/images/edits`, key.key, 51 * MB, { model: 'gpt-image-1', prompt: 'x' });
    expect(declared.status).toBe(413);
    expect(a.requests).toHaveLength(0);
    expect(await spoolEntries(gw)).toEqual([]);
  });

  it('a client that disconnects mid-upload leaves nothing in the spool', async () => {
    const boundary = 'tollgate-spool-boundary';
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(head);
        controller.enqueue(audioBytes(9, 512 * 1024));
      },
    });
    const abort = new AbortController();
    const upload = fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
      signal: abort.signal,
    } as RequestInit).catch((e) => e);
    // The file part reaches the spool while the upload is still open: streamed to disk, not held.
    await until(async () => (await spoolEntries(gw)).length > 0, 'the file part to reach the spool');
    abort.abort();
    expect((await upload).name).toBe('AbortError');
    await until(async () => (await spoolEntries(gw)).length === 0, 'the spool to be emptied');
    expect(a.requests).toHaveLength(0);
  });

  it('a model outside the plan is refused after the form is read, and the spool is emptied', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(audioBytes(8))]), 'speech.wav');
    form.append('model', 'no-such-model');
    expectErrorShape(await raw(gw, 'POST', '/v1/audio/transcriptions', { key: key.key, body: form }), 400, 'model_not_found');
    expect(a.requests).toHaveLength(0);
  });
});
