import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { PNG } from 'pngjs';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const free = newKey('free-key', 'free-co');
const paid = newKey('paid-key', 'paid-co');
const manifests = [
  upstream('openai', 'https://api.openai.com/v1'),
  model('gpt-image-1', [{ upstream: 'openai' }]),
  plan('pro', ['gpt-image-1']),
  account('free-co'),
  account('paid-co', 'pro'),
  apiKey(free),
  apiKey(paid),
];
const BODY_LIMIT = 1024 * 1024;

function decode(b64OrBytes: string | Buffer): PNG {
  return PNG.sync.read(typeof b64OrBytes === 'string' ? Buffer.from(b64OrBytes, 'base64') : b64OrBytes);
}

/** An RGBA picture whose every pixel is distinct enough to detect any misplaced copy. */
function makePng(width: number, height: number, pixel: (x: number, y: number) => [number, number, number, number]): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) png.data.set(pixel(x, y), (y * width + x) * 4);
  }
  return PNG.sync.write(png, { colorType: 6 });
}

const inputImage = () => makePng(64, 48, (x, y) => [x * 4, y * 5, (x * y) % 256, 255]);
const pixelAt = (png: PNG, x: number, y: number) => [...png.data.subarray((y * png.width + x) * 4, (y * png.width + x) * 4 + 4)];

/** Multipart by hand, for error paths the SDK would not send. */
async function postForm(gw: TestGateway, pathname: string, form: FormData, key = free.key) {
  return raw(gw, 'POST', pathname, { key, body: form });
}

function editForm(fields: Record<string, string>, files: Array<[string, Buffer, string?]>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  for (const [name, bytes, filename] of files) form.append(name, new Blob([new Uint8Array(bytes)], { type: 'image/png' }), filename ?? `${name}.png`);
  return form;
}

describe('service-test image generations', () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway(manifests, { maxBodyBytes: BODY_LIMIT });
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  it('makes n real PNGs of the requested size, as b64_json by default', async () => {
    const result = await client.images.generate({ model: 'service-test', prompt: 'A lighthouse at dusk', n: 3, size: '256x128' });
    expect(typeof result.created).toBe('number');
    expect(result.data).toHaveLength(3);
    const bytes = result.data!.map((image) => {
      expect(image.url).toBeUndefined();
      expect(image.revised_prompt).toMatch(/^A lighthouse at dusk, drawn as a .+ gradient from \w+ to \w+ with \d overlapping circles\.$/);
      const png = decode(image.b64_json!);
      expect([png.width, png.height]).toEqual([256, 128]);
      return image.b64_json;
    });
    expect(new Set(bytes).size).toBe(3);
  });

  it('is deterministic: the same request gives the same bytes, another prompt other bytes', async () => {
    const request = { model: 'service-test', prompt: 'Two cats on a sofa', size: '64x64', n: 2 } as const;
    const first = await client.images.generate(request);
    const second = await client.images.generate(request);
    expect(second.data!.map((d) => d.b64_json)).toEqual(first.data!.map((d) => d.b64_json));
    expect(second.data!.map((d) => d.revised_prompt)).toEqual(first.data!.map((d) => d.revised_prompt));
    const other = await client.images.generate({ ...request, prompt: 'Two dogs on a sofa' });
    expect(other.data![0].b64_json).not.toBe(first.data![0].b64_json);
  });

  it("draws a colourful picture, not a flat fill; style and background change it", async () => {
    const vivid = decode((await client.images.generate({ model: 'service-test', prompt: 'Sunrise', size: '96x96' })).data![0].b64_json!);
    const colours = new Set<string>();
    for (let i = 0; i < vivid.data.length; i += 4) colours.add(vivid.data.subarray(i, i + 3).join(','));
    expect(colours.size).toBeGreaterThan(50);
    expect(vivid.data.every((v, i) => i % 4 !== 3 || v === 255)).toBe(true);

    const natural = await client.images.generate({ model: 'service-test', prompt: 'Sunrise', size: '96x96', style: 'natural' });
    expect(decode(natural.data![0].b64_json!).data.equals(vivid.data)).toBe(false);

    const transparent = decode((await client.images.generate({ model: 'service-test', prompt: 'Sunrise', size: '96x96', background: 'transparent' })).data![0].b64_json!);
    const alphas = new Set<number>();
    for (let i = 3; i < transparent.data.length; i += 4) alphas.add(transparent.data[i]);
    expect(alphas).toEqual(new Set([0, 255]));
  });

  it("size auto (and no size) is 1024x1024", async () => {
    for (const size of ['auto', undefined] as const) {
      const result = await client.images.generate({ model: 'service-test', prompt: 'Default size', ...(size ? { size } : {}) });
      const png = decode(result.data![0].b64_json!);
      expect([png.width, png.height]).toEqual([1024, 1024]);
    }
  });

  it('accepts the sizes at both ends of the range', async () => {
    const tiny = await client.images.generate({ model: 'service-test', prompt: 'dot', size: '1x1' });
    expect(decode(tiny.data![0].b64_json!).width).toBe(1);
    const tall = await client.images.generate({ model: 'service-test', prompt: 'tower', size: '2x2048' });
    const png = decode(tall.data![0].b64_json!);
    expect([png.width, png.height]).toEqual([2, 2048]);
  });

  it('response_format url: a key-less capability URL serving the same PNG', async () => {
    const request = { model: 'service-test', prompt: 'A red balloon', size: '80x60', n: 2 } as const;
    const byUrl = await client.images.generate({ ...request, response_format: 'url' });
    const byB64 = await client.images.generate({ ...request, response_format: 'b64_json' });
    expect(byUrl.data).toHaveLength(2);
    const urls = byUrl.data!.map((d) => d.url!);
    expect(new Set(urls).size).toBe(2);
    for (const [i, url] of urls.entries()) {
      expect(url).toMatch(new RegExp(`^${gw.url}/images/[A-Za-z0-9_-]{32}\\.png$`));
      expect(byUrl.data![i].b64_json).toBeUndefined();
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(response.headers.get('cache-control')).toMatch(/^private, max-age=(3[0-5]\d\d|3600)$/);
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.toString('base64')).toBe(byB64.data![i].b64_json);
      expect(decode(bytes).width).toBe(80);
    }
  });

  it('image URLs 404 in the OpenAI shape for unknown, malformed and path-escaping ids', async () => {
    for (const pathname of [`/images/${'A'.repeat(32)}.png`, '/images/short.png', `/images/${'A'.repeat(32)}.jpg`, '/images/..%2F..%2Ftollgate.yaml', '/images/%2E%2E', `/images/${'A'.repeat(31)}%2F.png`]) {
      const response = await raw(gw, 'GET', pathname);
      expectErrorShape(response, 404);
      expect(response.json.error.message).not.toContain('tollgate.yaml');
    }
  });

  it('an image older than one hour is gone: 404, and its file is deleted', async () => {
    const result = await client.images.generate({ model: 'service-test', prompt: 'Ephemeral', size: '8x8', response_format: 'url' });
    const id = /\/images\/([^/]+)\.png$/.exec(result.data![0].url!)![1];
    const file = path.join(gw.dir, 'data', 'images', `${id}.png`);
    expect((await stat(file)).size).toBeGreaterThan(0);
    expect((await fetch(result.data![0].url!)).status).toBe(200);
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    await utimes(file, twoHoursAgo, twoHoursAgo);
    expectErrorShape(await raw(gw, 'GET', `/images/${id}.png`), 404, 'image_not_found');
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('reports the quality it rendered (auto picks medium; dall-e names map to medium and high) and the effective safety identifier', async () => {
    const rendered: Record<string, string | undefined> = {};
    for (const quality of ['auto', 'standard', 'hd', 'low', 'medium', 'high'] as const) {
      rendered[quality] = (await client.images.generate({ model: 'service-test', prompt: 'A dot', size: '8x8', quality })).quality;
    }
    expect(rendered).toEqual({ auto: 'medium', standard: 'medium', hd: 'high', low: 'low', medium: 'medium', high: 'high' });
    expect((await client.images.generate({ model: 'service-test', prompt: 'A dot', size: '8x8' })).quality).toBe('medium');
    // complexity is accepted and changes nothing in service-test's picture.
    const plain = await client.images.generate({ model: 'service-test', prompt: 'A dot', size: '8x8' });
    const complex = await client.images.generate({ model: 'service-test', prompt: 'A dot', size: '8x8', complexity: 'high', safety_identifier: 'user-42', user: 'legacy' });
    expect(complex.data![0].b64_json).toBe(plain.data![0].b64_json);
    expect(complex.safety_identifier).toBe('user-42');
    expect(plain.safety_identifier).toBeUndefined();
    expect((await client.images.generate({ model: 'service-test', prompt: 'A dot', size: '8x8', user: 'legacy' })).safety_identifier).toBe('legacy');
  });

  it('the SDK surfaces parameter errors as BadRequestError naming the parameter', async () => {
    const error = await client.images.generate({ model: 'service-test', prompt: 'x', size: '4096x4096' as '1024x1024' }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('size');
    expect(error.message).toContain('2048');
  });

  const valid = { model: 'service-test', prompt: 'A fox' };
  it.each([
    ['missing prompt', { model: 'service-test' }, 'prompt', 'missing_required_parameter'],
    ['empty prompt', { ...valid, prompt: '' }, 'prompt', 'missing_required_parameter'],
    ['prompt not a string', { ...valid, prompt: 42 }, 'prompt', 'invalid_type'],
    ['n = 0', { ...valid, n: 0 }, 'n', 'invalid_value'],
    ['n = 11', { ...valid, n: 11 }, 'n', 'invalid_value'],
    ['n fractional', { ...valid, n: 1.5 }, 'n', 'invalid_type'],
    ['n as text', { ...valid, n: 'two' }, 'n', 'invalid_type'],
    ['size without x', { ...valid, size: '1024' }, 'size', 'invalid_value'],
    ['size zero', { ...valid, size: '0x64' }, 'size', 'invalid_value'],
    ['size too large', { ...valid, size: '2049x10' }, 'size', 'invalid_value'],
    ['size with spaces', { ...valid, size: '64 x 64' }, 'size', 'invalid_value'],
    ['size negative', { ...valid, size: '-5x5' }, 'size', 'invalid_value'],
    ['size as number', { ...valid, size: 1024 }, 'size', 'invalid_type'],
    ['response_format unknown', { ...valid, response_format: 'gif' }, 'response_format', 'invalid_value'],
    ['output_format jpeg', { ...valid, output_format: 'jpeg' }, 'output_format', 'unsupported_value'],
    ['output_compression out of range', { ...valid, output_compression: 101 }, 'output_compression', 'invalid_value'],
    ['style unknown', { ...valid, style: 'bold' }, 'style', 'invalid_value'],
    ['quality unknown', { ...valid, quality: 'ultra' }, 'quality', 'invalid_value'],
    ['background unknown', { ...valid, background: 'green' }, 'background', 'invalid_value'],
    ['stream true', { ...valid, stream: true }, 'stream', 'unsupported_value'],
    ['user not a string', { ...valid, user: 7 }, 'user', 'invalid_type'],
    ['unknown parameter', { ...valid, colour: 'red' }, 'colour', 'unknown_parameter'],
    ['output_format gif', { ...valid, output_format: 'gif' }, 'output_format', 'unsupported_value'],
    ['complexity unknown', { ...valid, complexity: 'extreme' }, 'complexity', 'invalid_value'],
    ['frame_count out of range', { ...valid, frame_count: 40 }, 'frame_count', 'invalid_value'],
    ['frame_count without gif output', { ...valid, frame_count: 4 }, 'frame_count', 'unsupported_value'],
    ['frame_duration_ms not an integer', { ...valid, frame_duration_ms: 'slow' }, 'frame_duration_ms', 'invalid_type'],
    ['svg not an object', { ...valid, svg: 'yes' }, 'svg', 'invalid_type'],
    ['svg without svg output', { ...valid, svg: { model: 'gpt-5' } }, 'svg', 'unsupported_value'],
    ['safety_identifier not a string', { ...valid, safety_identifier: 3 }, 'safety_identifier', 'invalid_type'],
    ['missing model', { prompt: 'x' }, 'model', 'missing_required_parameter'],
    ['unknown model', { ...valid, model: 'dall-e-9' }, 'model', 'model_not_found'],
  ])('generations 400: %s', async (_label, body, param, code) => {
    const response = await raw(gw, 'POST', '/v1/images/generations', { key: free.key, body });
    const error = expectErrorShape(response, 400, code);
    expect(error.param).toBe(param);
  });

  it('generations: a bad JSON body is 400, a model outside the plan 402, an upstream model goes to the proxy (no credential configured here: 502)', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/images/generations', { key: free.key, body: '{"prompt":' }), 400, 'invalid_json');
    expect(expectErrorShape(await raw(gw, 'POST', '/v1/images/generations', { key: free.key, body: { model: 'gpt-image-1', prompt: 'x' } }), 402, 'subscription_required').param).toBe('model');
    expectErrorShape(await raw(gw, 'POST', '/v1/images/generations', { key: paid.key, body: { model: 'gpt-image-1', prompt: 'x' } }), 502, 'upstream_credentials_missing');
    expectErrorShape(await raw(gw, 'POST', '/v1/images/generations', { body: valid }), 401, 'invalid_api_key');
  });
});

describe('service-test image edits', () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway(manifests, { maxBodyBytes: BODY_LIMIT });
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  /** The prompt's pattern at a size, as service-test paints it for generations. */
  async function patternOf(prompt: string, size: string): Promise<PNG> {
    return decode((await client.images.generate({ model: 'service-test', prompt, size: size as '1024x1024' })).data![0].b64_json!);
  }

  it("checks markup (a transparent PNG of the image's size, never with a mask) and edits as without it", async () => {
    const image = await toFile(inputImage(), 'in.png', { type: 'image/png' });
    const overlay = () => toFile(makePng(64, 48, (x) => [255, 0, 0, x < 10 ? 255 : 0]), 'markup.png', { type: 'image/png' });
    const plain = await client.images.edit({ model: 'service-test', prompt: 'add a roof', image });
    const marked = await client.images.edit({ model: 'service-test', prompt: 'add a roof', image, markup: await overlay() });
    expect(marked.data![0].b64_json).toBe(plain.data![0].b64_json);
    const form = (markup: Buffer, withMask = false) => {
      const data = new FormData();
      data.append('model', 'service-test');
      data.append('prompt', 'add a roof');
      data.append('image', new Blob([new Uint8Array(inputImage())], { type: 'image/png' }), 'in.png');
      data.append('markup', new Blob([new Uint8Array(markup)], { type: 'image/png' }), 'markup.png');
      if (withMask) data.append('mask', new Blob([new Uint8Array(makePng(64, 48, () => [0, 0, 0, 0]))], { type: 'image/png' }), 'mask.png');
      return data;
    };
    const transparent = makePng(64, 48, () => [0, 0, 0, 0]);
    expect(expectErrorShape(await postForm(gw, '/v1/images/edits', form(transparent, true)), 400, 'invalid_value').param).toBe('markup');
    expect(expectErrorShape(await postForm(gw, '/v1/images/edits', form(makePng(32, 32, () => [0, 0, 0, 0]))), 400, 'invalid_value').param).toBe('markup');
    const opaque = new PNG({ width: 64, height: 48 });
    expect(expectErrorShape(await postForm(gw, '/v1/images/edits', form(PNG.sync.write(opaque, { colorType: 2 }))), 400, 'invalid_value').param).toBe('markup');
  });

  it('repaints exactly the transparent area of the mask and keeps the rest of the image', async () => {
    const input = inputImage();
    // Left half transparent (repaint), right half opaque (keep).
    const mask = makePng(64, 48, (x) => [0, 0, 0, x < 32 ? 0 : 255]);
    const result = await client.images.edit({
      model: 'service-test',
      prompt: 'Add a sun',
      image: await toFile(input, 'input.png', { type: 'image/png' }),
      mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
    });
    expect(result.data).toHaveLength(1);
    expect(result.data![0].revised_prompt).toMatch(/^Add a sun, drawn as/);
    const edited = decode(result.data![0].b64_json!);
    expect([edited.width, edited.height]).toEqual([64, 48]);
    const original = decode(input);
    const pattern = await patternOf('Add a sun', '64x48');
    for (let y = 0; y < 48; y++) {
      for (let x = 0; x < 64; x++) {
        expect(pixelAt(edited, x, y)).toEqual(x < 32 ? pixelAt(pattern, x, y) : pixelAt(original, x, y));
      }
    }
    // The repainted half really differs from the input (the test would pass vacuously otherwise).
    expect(pixelAt(pattern, 5, 5)).not.toEqual(pixelAt(original, 5, 5));
  });

  it('without a mask the whole image is edited: the input with the pattern laid over at a quarter', async () => {
    const input = inputImage();
    const result = await client.images.edit({ model: 'service-test', prompt: 'Warm light', image: await toFile(input, 'in.png', { type: 'image/png' }) });
    const edited = decode(result.data![0].b64_json!);
    const original = decode(input);
    const pattern = await patternOf('Warm light', '64x48');
    for (let i = 0; i < edited.data.length; i++) {
      expect(edited.data[i]).toBe(Math.round((3 * original.data[i] + pattern.data[i]) / 4));
    }
  });

  it('scales to the requested size (an opaque mask keeps every pixel: a pure scaled copy)', async () => {
    const input = inputImage();
    const opaqueMask = makePng(64, 48, () => [0, 0, 0, 255]);
    const result = await client.images.edit({
      model: 'service-test',
      prompt: 'Smaller',
      size: '32x24' as '256x256',
      n: 2,
      image: await toFile(input, 'in.png', { type: 'image/png' }),
      mask: await toFile(opaqueMask, 'mask.png', { type: 'image/png' }),
    });
    expect(result.data).toHaveLength(2);
    const original = decode(input);
    for (const image of result.data!) {
      const edited = decode(image.b64_json!);
      expect([edited.width, edited.height]).toEqual([32, 24]);
      for (let y = 0; y < 24; y++) for (let x = 0; x < 32; x++) expect(pixelAt(edited, x, y)).toEqual(pixelAt(original, 2 * x, 2 * y));
    }
  });

  it('blends several images sent as image[], and is deterministic', async () => {
    const a = makePng(16, 16, () => [200, 0, 100, 255]);
    const b = makePng(16, 16, () => [0, 100, 51, 255]);
    const mask = makePng(16, 16, () => [0, 0, 0, 255]);
    const edit = async () =>
      client.images.edit({
        model: 'service-test',
        prompt: 'Merge',
        image: [await toFile(a, 'a.png', { type: 'image/png' }), await toFile(b, 'b.png', { type: 'image/png' })],
        mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
      });
    const first = await edit();
    expect(pixelAt(decode(first.data![0].b64_json!), 7, 7)).toEqual([100, 50, 76, 255]);
    expect((await edit()).data![0].b64_json).toBe(first.data![0].b64_json);
  });

  it('response_format url works for edits too', async () => {
    const result = await client.images.edit({ model: 'service-test', prompt: 'Frame it', response_format: 'url', image: await toFile(inputImage(), 'in.png', { type: 'image/png' }) });
    const response = await fetch(result.data![0].url!);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(decode(Buffer.from(await response.arrayBuffer())).width).toBe(64);
  });

  it('edits 400: non-PNG, corrupt PNG, pixel bomb, mask problems, missing or misplaced fields', async () => {
    const good = inputImage();
    const corrupt = Buffer.concat([good.subarray(0, 40), Buffer.alloc(60, 7)]);
    const bomb = Buffer.from(good);
    bomb.writeUInt32BE(100_000, 16);
    bomb.writeUInt32BE(100_000, 20);
    const rgbMask = PNG.sync.write(new PNG({ width: 64, height: 48 }), { colorType: 2 });
    const cases: Array<[string, FormData, number, string, string | null]> = [
      ['not a PNG', editForm({ model: 'service-test', prompt: 'x' }, [['image', Buffer.from('GIF89a not really'), 'in.gif']]), 400, 'invalid_image_format', 'image'],
      ['corrupt PNG', editForm({ model: 'service-test', prompt: 'x' }, [['image', corrupt]]), 400, 'invalid_image', 'image'],
      ['pixel bomb', editForm({ model: 'service-test', prompt: 'x' }, [['image', bomb]]), 400, 'invalid_image_size', 'image'],
      ['mask of another size', editForm({ model: 'service-test', prompt: 'x' }, [['image', good], ['mask', makePng(10, 10, () => [0, 0, 0, 0])]]), 400, 'invalid_value', 'mask'],
      ['mask without alpha', editForm({ model: 'service-test', prompt: 'x' }, [['image', good], ['mask', rgbMask]]), 400, 'invalid_value', 'mask'],
      ['mask not a PNG', editForm({ model: 'service-test', prompt: 'x' }, [['image', good], ['mask', Buffer.from('nope')]]), 400, 'invalid_image_format', 'mask'],
      ['two masks', editForm({ model: 'service-test', prompt: 'x' }, [['image', good], ['mask', good], ['mask', good]]), 400, 'invalid_value', 'mask'],
      ['no image', editForm({ model: 'service-test', prompt: 'x' }, []), 400, 'missing_required_parameter', 'image'],
      ['image as a text field', editForm({ model: 'service-test', prompt: 'x', image: 'cat.png' }, []), 400, 'invalid_type', 'image'],
      ['missing prompt', editForm({ model: 'service-test' }, [['image', good]]), 400, 'missing_required_parameter', 'prompt'],
      ['n out of range', editForm({ model: 'service-test', prompt: 'x', n: '11' }, [['image', good]]), 400, 'invalid_value', 'n'],
      ['n not an integer', editForm({ model: 'service-test', prompt: 'x', n: 'three' }, [['image', good]]), 400, 'invalid_type', 'n'],
      ['size malformed', editForm({ model: 'service-test', prompt: 'x', size: 'big' }, [['image', good]]), 400, 'invalid_value', 'size'],
      ['unknown field', editForm({ model: 'service-test', prompt: 'x', colour: 'red' }, [['image', good]]), 400, 'unknown_parameter', 'colour'],
      ['unknown file part', editForm({ model: 'service-test', prompt: 'x' }, [['image', good], ['reference', good]]), 400, 'unknown_parameter', 'reference'],
      ['missing model', editForm({ prompt: 'x' }, [['image', good]]), 400, 'missing_required_parameter', 'model'],
      ['model outside the plan', editForm({ model: 'gpt-image-1', prompt: 'x' }, [['image', good]]), 402, 'subscription_required', 'model'],
    ];
    for (const [label, form, status, code, param] of cases) {
      const response = await postForm(gw, '/v1/images/edits', form);
      const error = expectErrorShape(response, status, code);
      expect({ label, param: error.param }).toEqual({ label, param });
    }
  });

  it('edits: JSON instead of multipart is 400, a body past the limit 413', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/images/edits', { key: free.key, body: { model: 'service-test', prompt: 'x' } }), 400, 'invalid_content_type');
    const huge = editForm({ model: 'service-test', prompt: 'x' }, [['image', Buffer.alloc(BODY_LIMIT + 1000, 1)]]);
    expectErrorShape(await postForm(gw, '/v1/images/edits', huge), 413, 'request_too_large');
  });

  it('an upstream model in the plan goes to the proxy (no credential configured here: 502)', async () => {
    const response = await postForm(gw, '/v1/images/edits', editForm({ model: 'gpt-image-1', prompt: 'x' }, [['image', inputImage()]]), paid.key);
    expectErrorShape(response, 502, 'upstream_credentials_missing');
  });
});

describe('image storage across restarts', () => {
  let dataDir: string;
  let gw: TestGateway;
  const stale = `${'S'.repeat(32)}.png`;
  const fresh = `${'F'.repeat(32)}.png`;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-images-'));
    await mkdir(path.join(dataDir, 'images'), { recursive: true });
    const png = makePng(4, 4, () => [1, 2, 3, 255]);
    await writeFile(path.join(dataDir, 'images', stale), png);
    await writeFile(path.join(dataDir, 'images', fresh), png);
    const longAgo = new Date(Date.now() - 3 * 3600_000);
    await utimes(path.join(dataDir, 'images', stale), longAgo, longAgo);
    gw = await startTestGateway(manifests, { dataDir, publicURL: 'https://images.example.test/gateway/' });
  });
  afterAll(async () => {
    await gw.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('start-up removes images that expired while the gateway was down, and keeps the others', async () => {
    await expect(stat(path.join(dataDir, 'images', stale))).rejects.toMatchObject({ code: 'ENOENT' });
    const response = await fetch(`${gw.url}/images/${fresh}`);
    expect(response.status).toBe(200);
    expect(decode(Buffer.from(await response.arrayBuffer())).width).toBe(4);
  });

  it('image URLs are built on the configured public URL', async () => {
    const result = await gw.client(free.key).images.generate({ model: 'service-test', prompt: 'Behind a proxy', size: '8x8', response_format: 'url' });
    const url = result.data![0].url!;
    expect(url).toMatch(/^https:\/\/images\.example\.test\/gateway\/images\/[A-Za-z0-9_-]{32}\.png$/);
    const local = await fetch(`${gw.url}${new URL(url).pathname.replace('/gateway', '')}`);
    expect(local.status).toBe(200);
  });
});
