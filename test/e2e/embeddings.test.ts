import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const free = newKey('free-key', 'free-co');
const paid = newKey('paid-key', 'paid-co');
const manifests = [
  upstream('openai', 'https://api.openai.com/v1'),
  model('text-embedding-3-small', [{ upstream: 'openai' }]),
  plan('pro', ['text-embedding-3-*']),
  account('free-co'),
  account('paid-co', 'pro'),
  apiKey(free),
  apiKey(paid),
];

const norm = (v: ArrayLike<number>) => Math.sqrt(Array.from(v).reduce((sum, x) => sum + x * x, 0));
const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i], 0) / (norm(a) * norm(b));

function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const values: number[] = [];
  for (let offset = 0; offset < bytes.length; offset += 4) values.push(bytes.readFloatLE(offset));
  return values;
}

describe('embeddings from service-test', () => {
  let gw: TestGateway;
  let client: OpenAI;
  const embed = async (input: string | string[] | number[] | number[][], extra: { dimensions?: number } = {}) =>
    (await client.embeddings.create({ model: 'service-test', input, encoding_format: 'float', ...extra })).data.map((d) => d.embedding);

  beforeAll(async () => {
    gw = await startTestGateway(manifests);
    client = gw.client(free.key);
  });
  afterAll(() => gw.stop());

  it('the SDK default asks for base64, decodes it, and gets 1536 unit-length floats', async () => {
    let sent: any;
    let received: any;
    const spying = gw.client(free.key, {
      fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
        sent = JSON.parse(String(init?.body));
        const response = await fetch(url, init);
        received = await response.clone().json();
        return response;
      },
    });
    const result = await spying.embeddings.create({ model: 'service-test', input: 'hello world' });
    expect(sent.encoding_format).toBe('base64');
    expect(typeof received.data[0].embedding).toBe('string');

    expect(result).toMatchObject({ object: 'list', model: 'service-test', usage: { prompt_tokens: 2, total_tokens: 2 } });
    expect(result.data).toHaveLength(1);
    expect(result.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    const vector = result.data[0].embedding;
    expect(vector).toHaveLength(1536);
    expect(vector.every((x) => Number.isFinite(x))).toBe(true);
    expect(norm(vector)).toBeCloseTo(1, 5);
    // The SDK's decoding of our base64 equals what we send as floats.
    expect(vector).toEqual((await embed('hello world'))[0]);
  });

  it('raw base64 decodes (little-endian float32) to exactly the float answer', async () => {
    const body = { model: 'service-test', input: ['alpha beta', 'gamma'] };
    const b64 = await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body: { ...body, encoding_format: 'base64' } });
    const floats = await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body: { ...body, encoding_format: 'float' } });
    const plain = await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body });
    expect(b64.status).toBe(200);
    expect(b64.headers.get('content-type')).toMatch(/^application\/json/);
    for (const i of [0, 1]) {
      expect(Buffer.from(b64.json.data[i].embedding, 'base64')).toHaveLength(1536 * 4);
      expect(decodeBase64(b64.json.data[i].embedding)).toEqual(floats.json.data[i].embedding);
      // Without encoding_format the wire default is float, as OpenAI's.
      expect(plain.json.data[i].embedding).toEqual(floats.json.data[i].embedding);
    }
  });

  it('is deterministic, and different texts differ', async () => {
    const [a1] = await embed('The quick brown fox');
    const [a2] = await embed('The quick brown fox');
    const [b] = await embed('An entirely different sentence');
    expect(a1).toEqual(a2);
    expect(b).not.toEqual(a1);
    expect(norm(b)).toBeCloseTo(1, 5);
  });

  it('texts that share words are closer than unrelated texts', async () => {
    const [cat, similarCat, unrelated] = await embed(['the cat sat on the mat', 'a cat sat on a mat', 'quarterly revenue forecast spreadsheet']);
    const close = cosine(cat, similarCat);
    const far = cosine(cat, unrelated);
    expect(close).toBeGreaterThan(0.4);
    expect(Math.abs(far)).toBeLessThan(0.15);

    // A small retrieval check: documents about the query's words rank first.
    const [query, ...docs] = await embed(['how do I bake bread', 'stock market news today', 'bake sourdough bread at home', 'fresh bread from the bakery', 'football results']);
    const ranking = docs.map((d, i) => ({ i, score: cosine(query, d) })).sort((x, y) => y.score - x.score).map((r) => r.i);
    expect(ranking.slice(0, 2)).toEqual([1, 2]);
  });

  it('ignores case and punctuation, as word features should', async () => {
    const [a, b] = await embed(['Hello, World!', 'hello world']);
    expect(a).toEqual(b);
  });

  it('honours dimensions: a shorter vector is the renormalised prefix of the default one', async () => {
    const [full] = await embed('dimension check');
    for (const dimensions of [1, 256, 3072]) {
      const [short] = await embed('dimension check', { dimensions });
      expect(short).toHaveLength(dimensions);
      expect(norm(short)).toBeCloseTo(1, 5);
      if (dimensions <= full.length) {
        const prefix = full.slice(0, dimensions);
        const scale = norm(prefix);
        prefix.forEach((x, i) => expect(short[i]).toBeCloseTo(x / scale, 5));
      }
    }
    const b64 = await client.embeddings.create({ model: 'service-test', input: 'dimension check', dimensions: 64 });
    expect(b64.data[0].embedding).toHaveLength(64);
  });

  it('embeds a batch in order, each item as it would be alone, and counts tokens for all of them', async () => {
    const inputs = ['hello world', 'The quick brown fox', 'a'];
    const result = await client.embeddings.create({ model: 'service-test', input: inputs, encoding_format: 'float' });
    expect(result.data.map((d) => d.index)).toEqual([0, 1, 2]);
    for (const [i, text] of inputs.entries()) expect(result.data[i].embedding).toEqual((await embed(text))[0]);
    expect(result.usage).toEqual({ prompt_tokens: 2 + 4 + 1, total_tokens: 7 });
  });

  it('embeds token arrays; usage is their length; shared tokens mean similarity', async () => {
    const single = await client.embeddings.create({ model: 'service-test', input: [24912, 2375, 99] });
    expect(single.data).toHaveLength(1);
    expect(single.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    expect(norm(single.data[0].embedding)).toBeCloseTo(1, 5);

    const many = await client.embeddings.create({ model: 'service-test', input: [[1, 2, 3, 4], [1, 2, 3, 5], [900, 901, 902, 903]], encoding_format: 'float' });
    expect(many.usage).toEqual({ prompt_tokens: 12, total_tokens: 12 });
    const [a, b, c] = many.data.map((d) => d.embedding);
    expect(cosine(a, b)).toBeGreaterThan(cosine(a, c) + 0.4);
    expect(many.data[0].embedding).toEqual((await embed([1, 2, 3, 4]))[0]);
  });

  it('accepts user and null optional fields', async () => {
    const result = await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body: { model: 'service-test', input: 'x', user: 'user-1', dimensions: null, encoding_format: null } });
    expect(result.status).toBe(200);
    expect(result.json.data[0].embedding).toHaveLength(1536);
  });
});

describe('embeddings: refused requests', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests);
  });
  afterAll(() => gw.stop());

  const tokens = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + (i % 1000));

  it.each([
    ['no input', { model: 'service-test' }, 'input', 'missing_required_parameter'],
    ['null input', { model: 'service-test', input: null }, 'input', 'missing_required_parameter'],
    ['an empty string', { model: 'service-test', input: '' }, 'input', 'invalid_value'],
    ['an empty array', { model: 'service-test', input: [] }, 'input', 'invalid_value'],
    ['an empty string in the array', { model: 'service-test', input: ['a', ''] }, 'input', 'invalid_value'],
    ['an empty token array', { model: 'service-test', input: [[1], []] }, 'input', 'invalid_value'],
    ['2049 inputs', { model: 'service-test', input: Array.from({ length: 2049 }, () => 'x') }, 'input', 'invalid_value'],
    ['a number', { model: 'service-test', input: 42 }, 'input', 'invalid_type'],
    ['an object', { model: 'service-test', input: { text: 'x' } }, 'input', 'invalid_type'],
    ['mixed strings and tokens', { model: 'service-test', input: ['a', 1] }, 'input', 'invalid_type'],
    ['nested strings', { model: 'service-test', input: [['a']] }, 'input', 'invalid_type'],
    ['a negative token', { model: 'service-test', input: [1, -2] }, 'input', 'invalid_type'],
    ['a fractional token', { model: 'service-test', input: [[1.5]] }, 'input', 'invalid_type'],
    ['a text over 8192 tokens', { model: 'service-test', input: 'word '.repeat(9000) }, 'input', 'context_length_exceeded'],
    ['a token array over 8192', { model: 'service-test', input: tokens(8193) }, 'input', 'context_length_exceeded'],
    ['over 300000 tokens in all', { model: 'service-test', input: Array.from({ length: 38 }, () => tokens(8000)) }, 'input', 'max_tokens_per_request'],
    ['an unknown parameter', { model: 'service-test', input: 'x', temperature: 1 }, 'temperature', 'unknown_parameter'],
    ['an unknown encoding', { model: 'service-test', input: 'x', encoding_format: 'hex' }, 'encoding_format', 'invalid_value'],
    ['zero dimensions', { model: 'service-test', input: 'x', dimensions: 0 }, 'dimensions', 'invalid_value'],
    ['too many dimensions', { model: 'service-test', input: 'x', dimensions: 3073 }, 'dimensions', 'invalid_value'],
    ['fractional dimensions', { model: 'service-test', input: 'x', dimensions: 1.5 }, 'dimensions', 'invalid_type'],
    ['dimensions as text', { model: 'service-test', input: 'x', dimensions: '256' }, 'dimensions', 'invalid_type'],
    ['a numeric user', { model: 'service-test', input: 'x', user: 5 }, 'user', 'invalid_type'],
    ['no model', { input: 'x' }, 'model', 'missing_required_parameter'],
    ['an unknown model', { model: 'no-such-model', input: 'x' }, 'model', 'model_not_found'],
  ])('%s: 400 naming the parameter', async (_label, body, param, code) => {
    const error = expectErrorShape(await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body }), 400, code);
    expect(error.param).toBe(param);
  });

  it('the SDK surfaces a 400 as BadRequestError with the param', async () => {
    const error = await gw.client(free.key).embeddings.create({ model: 'service-test', input: '' }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('input');
  });

  it('malformed JSON: 400 invalid_json', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body: '{"model":' }), 400, 'invalid_json');
  });

  it('a model outside the free plan: 402; an upstream model of the plan is proxied (here: no credential configured, 502)', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/embeddings', { key: free.key, body: { model: 'text-embedding-3-small', input: 'x' } }), 402, 'subscription_required');
    const response = await raw(gw, 'POST', '/v1/embeddings', { key: paid.key, body: { model: 'text-embedding-3-small', input: 'x', some_future_param: true } });
    // Unknown parameters are not refused for upstream models: the request reached the proxy.
    expectErrorShape(response, 502, 'upstream_credentials_missing');
  });

  it('needs a key', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/embeddings', { body: { model: 'service-test', input: 'x' } }), 401, 'invalid_api_key');
  });
});
