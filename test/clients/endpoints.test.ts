// The endpoints issue 12 added, driven by the official Node SDK and by raw HTTP shaped like the
// Python SDK's requests (its wire format: the same paths and bodies, its own X-Stainless headers),
// against service-test and against an upstream model (the fake upstream).
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape, raw } from '../helpers/gateway.ts';
import { until } from '../helpers/proxy-tools.ts';
import { png, startClientWorld, twoPagePdf, type ClientWorld } from './setup.ts';

let world: ClientWorld;
beforeAll(async () => {
  world = await startClientWorld();
});
afterAll(() => world?.stop());

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: world.baseURL, maxRetries: 0 });
/** The headers openai-python 1.x/2.x sends with every request. */
const PYTHON_HEADERS = { 'user-agent': 'OpenAI/Python 2.8.1', 'x-stainless-lang': 'python', 'x-stainless-package-version': '2.8.1', 'x-stainless-runtime': 'CPython', 'x-stainless-retry-count': '0' };
const python = (method: string, path: string, key: string, body?: unknown) => raw(world.gw, method, path, { key, body, headers: PYTHON_HEADERS });

describe('service-test', () => {
  it("item_reference resolves from the account's stored responses; an unknown or foreign id is a 400", async () => {
    const client = sdk(world.freeKey);
    const first = await client.responses.create({ model: 'service-test', input: 'Remember me' });
    const second = await client.responses.create({ model: 'service-test', input: [{ type: 'message', role: 'user', content: 'Remember me' }, { type: 'item_reference', id: first.output[0].id! }, { type: 'message', role: 'user', content: 'Now?' }] });
    expect(second.output_text).toContain('3 messages (2 user, 1 assistant)');
    const unknown = await raw(world.gw, 'POST', '/v1/responses', { key: world.freeKey, body: { model: 'service-test', input: [{ type: 'item_reference', id: 'msg_nope' }] } });
    expect(expectErrorShape(unknown, 400, 'invalid_value').param).toBe('input[0].id');
    const foreign = await raw(world.gw, 'POST', '/v1/responses', { key: world.paidKey, body: { model: 'service-test', input: [{ type: 'item_reference', id: first.output[0].id }] } });
    expectErrorShape(foreign, 400, 'invalid_value');
    // store: false keeps nothing to refer to.
    const unstored = await client.responses.create({ model: 'service-test', input: 'x', store: false });
    expectErrorShape(await raw(world.gw, 'POST', '/v1/responses', { key: world.freeKey, body: { model: 'service-test', input: [{ type: 'item_reference', id: unstored.output[0].id }] } }), 400, 'invalid_value');
  });

  it('GET /v1/responses/{id}/input_items lists the input with ids, newest first, paginated (Python: responses.input_items.list)', async () => {
    const client = sdk(world.freeKey);
    const response = await client.responses.create({ model: 'service-test', instructions: 'Be brief', input: [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }, { role: 'user', content: 'three' }] });
    const page = await client.responses.inputItems.list(response.id);
    expect(page.data.map((item: any) => item.content?.[0]?.text ?? item.content)).toEqual(['three', 'two', 'one']);
    expect(page.data.every((item) => typeof item.id === 'string')).toBe(true);
    const asc = await python('GET', `/v1/responses/${response.id}/input_items?limit=2&order=asc`, world.freeKey);
    expect(asc.status).toBe(200);
    expect(asc.json.has_more).toBe(true);
    const rest = await python('GET', `/v1/responses/${response.id}/input_items?order=asc&after=${asc.json.last_id}`, world.freeKey);
    expect(rest.json.data).toHaveLength(1);
    expectErrorShape(await python('GET', `/v1/responses/${response.id}/input_items`, world.paidKey), 404, 'response_not_found');
  });

  it('POST /v1/responses/input_tokens counts like the response would (Python: responses.input_tokens.count)', async () => {
    const client = sdk(world.freeKey);
    const response = await client.responses.create({ model: 'service-test', input: 'Count these tokens please' });
    const counted = await python('POST', '/v1/responses/input_tokens', world.freeKey, { model: 'service-test', input: 'Count these tokens please' });
    expect(counted.status).toBe(200);
    expect(counted.json).toEqual({ object: 'response.input_tokens', input_tokens: response.usage!.input_tokens });
    // `model` is optional there.
    expect((await python('POST', '/v1/responses/input_tokens', world.freeKey, { input: 'Count these tokens please' })).json.input_tokens).toBe(response.usage!.input_tokens);
    // The :id routes no longer swallow it: GET is a 405 naming POST, not a lookup of a response called input_tokens.
    expect((await raw(world.gw, 'GET', '/v1/responses/input_tokens', { key: world.freeKey })).status).not.toBe(200);
  });

  it('POST /v1/moderations answers deterministically, model optional (Python: moderations.create)', async () => {
    const answer = await python('POST', '/v1/moderations', world.freeKey, { input: ['a', 'b'] });
    expect(answer.status).toBe(200);
    expect(answer.json.model).toBe('service-test');
    expect(answer.json.results).toHaveLength(2);
    expect(answer.json.results[0].flagged).toBe(false);
    expect(Object.values(answer.json.results[0].categories).every((v) => v === false)).toBe(true);
    expect(Object.values(answer.json.results[0].category_scores).every((v) => v === 0)).toBe(true);
    const viaSdk = await sdk(world.freeKey).moderations.create({ model: 'service-test', input: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] });
    expect(viaSdk.results).toHaveLength(1);
    expect(viaSdk.results[0].category_applied_input_types.violence).toEqual(['text', 'image']);
  });

  it('POST /v1/images/variations answers like edits (Python: images.create_variation)', async () => {
    const result = await sdk(world.freeKey).images.createVariation({ model: 'service-test', image: await toFile(png(32, 32), 'in.png', { type: 'image/png' }), n: 2, size: '256x256', response_format: 'b64_json' });
    expect(result.data).toHaveLength(2);
    const bytes = Buffer.from(result.data![0].b64_json!, 'base64');
    expect(bytes.readUInt32BE(16)).toBe(256);
    expect(result.data![0].b64_json).not.toBe(result.data![1].b64_json);
  });

  it('POST /v1/completions: JSON with echo, suffix, max_tokens 16 by default, and SSE with usage and [DONE] (Python: completions.create)', async () => {
    const client = sdk(world.freeKey);
    const short = await client.completions.create({ model: 'service-test', prompt: 'Say something long enough to be cut' });
    expect(short.choices[0].finish_reason).toBe('length');
    expect(short.usage!.completion_tokens).toBe(16);
    const full = await python('POST', '/v1/completions', world.freeKey, { model: 'service-test', prompt: ['A', 'B'], max_tokens: 500, n: 2, echo: true });
    expect(full.json.object).toBe('text_completion');
    expect(full.json.choices.map((c: any) => c.index)).toEqual([0, 1, 2, 3]);
    expect(full.json.choices[2].text.startsWith('B')).toBe(true);
    const stream = await client.completions.create({ model: 'service-test', prompt: 'Stream', max_tokens: 500, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: any = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toContain('You wrote: "Stream"');
    expect(usage.completion_tokens).toBeGreaterThan(0);
  });

  it('files: chat file parts and Responses input_file / input_image by file_id, only in the uploading account', async () => {
    const client = sdk(world.freeKey);
    const pdf = await client.files.create({ file: await toFile(twoPagePdf(), 'uploaded.pdf', { type: 'application/pdf' }), purpose: 'user_data' });
    const image = await client.files.create({ file: await toFile(png(12, 10), 'pic.png', { type: 'image/png' }), purpose: 'vision' });
    const chat = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: [{ type: 'text', text: 'Read' }, { type: 'file', file: { file_id: pdf.id } }] }] });
    expect(chat.choices[0].message.content).toContain("File 1 'uploaded.pdf' is application/pdf");
    expect(chat.choices[0].message.content).toContain('2 pages');
    const inline = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${twoPagePdf().toString('base64')}` } }] }] });
    expect(inline.choices[0].message.content).toContain("'a.pdf' is application/pdf");
    const response = await client.responses.create({
      model: 'service-test',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Both' }, { type: 'input_file', file_id: pdf.id }, { type: 'input_image', file_id: image.id, detail: 'auto' }, { type: 'input_file', filename: 'b.pdf', file_data: `data:application/pdf;base64,${twoPagePdf().toString('base64')}` }] }],
    });
    expect(response.output_text).toContain('PNG image of 12×10 pixels');
    expect(response.output_text).toContain("File 1 'uploaded.pdf'");
    expect(response.output_text).toContain("File 2 'b.pdf'");
    // Another account's file id is as unknown as a made-up one.
    const foreign = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.paidKey, body: { model: 'service-test', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: pdf.id } }] }] } });
    expect(expectErrorShape(foreign, 400, 'invalid_value').param).toBe('messages[0].content[0].file.file_id');
  });
});

describe('upstream models (the fake upstream)', () => {
  it('POST /v1/completions is proxied: JSON renamed, SSE with [DONE], the usage chunk added for accounting and hidden again', async () => {
    const client = sdk(world.paidKey);
    const json = await client.completions.create({ model: 'fake-chat', prompt: 'Hi' });
    expect(json.model).toBe('fake-chat');
    expect(json.choices[0].text).toBe('completion from fake');
    const streamed = await raw(world.gw, 'POST', '/v1/completions', { key: world.paidKey, body: { model: 'fake-chat', prompt: 'Hi', stream: true } });
    expect(streamed.text.trim().endsWith('data: [DONE]')).toBe(true);
    expect(streamed.text).not.toContain('"usage"');
    expect(streamed.text).not.toContain('upstream-model');
    const sent = world.fake.requests.filter((r) => r.path === '/v1/completions').map((r) => JSON.parse(r.body));
    expect(sent.at(-1)).toMatchObject({ model: 'upstream-model', stream: true, stream_options: { include_usage: true } });
    // The hidden usage chunk still counted: the access log line (written when the answer closes) has it.
    const streamedLine = () => world.gw.logs.find((l) => l.route === '/v1/completions' && l.requestId === streamed.headers.get('x-request-id'));
    await until(() => streamedLine() !== undefined, 'the access log line of the stream');
    expect(streamedLine()).toMatchObject({ inputTokens: 6, outputTokens: 3 });
  });

  it('moderations, image variations and input_tokens are forwarded with the model renamed', async () => {
    const before = world.fake.requests.length;
    expect((await python('POST', '/v1/moderations', world.paidKey, { model: 'fake-chat', input: 'x' })).json.results).toHaveLength(1);
    expect((await python('POST', '/v1/responses/input_tokens', world.paidKey, { model: 'fake-chat', input: 'x' })).json.path).toBe('/v1/responses/input_tokens');
    await sdk(world.paidKey).images.createVariation({ model: 'fake-chat', image: await toFile(png(8, 8), 'v.png', { type: 'image/png' }) });
    const sent = world.fake.requests.slice(before);
    expect(sent.map((r) => r.path)).toEqual(['/v1/moderations', '/v1/responses/input_tokens', '/v1/images/variations']);
    expect(JSON.parse(sent[0].body).model).toBe('upstream-model');
    expect(sent[2].form!.fields.model).toEqual(['upstream-model']);
    expect(sent[2].form!.files[0].field).toBe('image');
  });

  it("GET /v1/responses/{id}/input_items of an upstream's response goes to that upstream", async () => {
    const response = await sdk(world.paidKey).responses.create({ model: 'fake-chat', input: 'Hi' });
    const listed = await python('GET', `/v1/responses/${response.id}/input_items?limit=5`, world.paidKey);
    expect(listed.json.path).toBe(`/v1/responses/${response.id}/input_items?limit=5`);
  });
});
