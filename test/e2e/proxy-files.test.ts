import { randomBytes } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { sha256, spoolEntries } from '../helpers/proxy-tools.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

const SECRET = 'sk-upstream-secret-files-0123456789';
process.env.TEST_UPSTREAM_KEY = SECRET;
const acme = newKey('acme-key', 'acme');
const globex = newKey('globex-key', 'globex');
const free = newKey('free-key', 'free-co');
const LOCAL_FILE_ID = /^file-[A-Za-z0-9]{24}$/;

function filesUpstream(name: string, url: string) {
  const resource = upstream(name, url);
  return { ...resource, spec: { ...resource.spec, files: true } };
}

describe('files, batches and threads kept by an upstream', () => {
  let store: FakeUpstream;
  let chat: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  const manifests = () => [
    filesUpstream('store', store.url),
    upstream('chat', chat.url),
    model('gpt-4o', [{ upstream: 'store', model: 'fake-gpt' }, { upstream: 'chat', priority: 1 }]),
    model('gpt-4o-mini', [{ upstream: 'chat' }]),
    plan('pro', ['gpt-4o*']),
    account('acme', 'pro'),
    account('globex', 'pro'),
    account('free-co'),
    ...[acme, globex, free].map(apiKey),
  ];

  beforeAll(async () => {
    store = await startFakeUpstream('store');
    chat = await startFakeUpstream('chat');
    gw = await startTestGateway(manifests());
    client = gw.client(acme.key);
  });
  afterAll(async () => {
    await gw.stop();
    await store.close();
    await chat.close();
  });

  it('uploads to the files upstream through the SDK, with the upstream credential and the bytes intact', async () => {
    const bytes = randomBytes(200_000);
    const file = await client.files.create({ file: await toFile(bytes, 'data.jsonl', { type: 'application/jsonl' }), purpose: 'batch' });
    expect(file).toMatchObject({ object: 'file', bytes: bytes.length, filename: 'data.jsonl', purpose: 'batch' });
    expect(file.id).toMatch(/^file-store\d+$/);
    const sent = store.requests.at(-1)!;
    expect(sent.path).toBe('/v1/files');
    expect(sent.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(sent.form!.files[0]).toMatchObject({ field: 'file', filename: 'data.jsonl', bytes: bytes.length, sha256: sha256(bytes) });
    expect(sent.form!.fields.purpose).toEqual(['batch']);
    expect(chat.requests).toHaveLength(0);
    // Nothing in the gateway's own store, nothing left in the spool.
    expect((await readdir(path.join(gw.dir, 'data', 'files'))).filter((n) => n.endsWith('.bin'))).toEqual([]);
    expect(await spoolEntries(gw)).toEqual([]);
  });

  it('file upload → batch create → retrieve → output download, all routed to the upstream that issued the ids', async () => {
    const input = await client.files.create({ file: await toFile(Buffer.from('{"custom_id":"1"}\n'), 'in.jsonl'), purpose: 'batch' });
    const batch = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    expect(batch).toMatchObject({ object: 'batch', input_file_id: input.id, status: 'validating' });
    expect(store.store.batches.has(batch.id)).toBe(true);
    const done = await client.batches.retrieve(batch.id);
    expect(done.status).toBe('completed');
    // The output file was issued by the upstream while the batch ran: it belongs to this account too.
    const output = await client.files.content(done.output_file_id!);
    expect(await output.text()).toBe('{"custom_id":"1","response":{"status_code":200}}\n');
    const second = await client.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    expect((await client.batches.cancel(second.id)).status).toBe('cancelling');
    expect(store.requests.at(-1)!.path).toBe(`/v1/batches/${second.id}/cancel`);
    const listed = [];
    for await (const item of client.batches.list({ limit: 1 })) listed.push(item.id);
    expect(listed.sort()).toEqual([batch.id, second.id].sort());
    expect(chat.requests).toHaveLength(0);
  });

  it('streams file content through byte for byte, even when the upstream labels it JSON', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 7);
    const file = await client.files.create({ file: await toFile(bytes, 'blob.bin'), purpose: 'user_data' });
    const content = await client.files.content(file.id);
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
    const received = Buffer.from(await content.arrayBuffer());
    expect(received.length).toBe(bytes.length);
    expect(sha256(received)).toBe(sha256(bytes));
  });

  it('retrieves, lists (only this account, page by page) and deletes', async () => {
    const mine = await client.files.create({ file: await toFile(Buffer.from('mine'), 'mine.txt'), purpose: 'user_data' });
    const theirs = await gw.client(globex.key).files.create({ file: await toFile(Buffer.from('theirs'), 'theirs.txt'), purpose: 'user_data' });
    expect(await client.files.retrieve(mine.id)).toMatchObject({ id: mine.id, filename: 'mine.txt' });
    const ids: string[] = [];
    for await (const file of client.files.list({ limit: 2 })) ids.push(file.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe([...store.store.files.values()].length - 1);
    expect(await client.files.delete(mine.id)).toMatchObject({ id: mine.id, deleted: true });
    expectErrorShape(await raw(gw, 'GET', `/v1/files/${mine.id}`, { key: acme.key }), 404, 'file_not_found');
  });

  it('keeps accounts apart: another account gets 404 for every routed id, as if it never existed', async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from('secret'), 'secret.jsonl'), purpose: 'batch' });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const thread = await client.beta.threads.create();
    const seen = store.requests.length;
    for (const [method, pathname] of [
      ['GET', `/v1/files/${file.id}`],
      ['GET', `/v1/files/${file.id}/content`],
      ['DELETE', `/v1/files/${file.id}`],
      ['GET', `/v1/batches/${batch.id}`],
      ['POST', `/v1/batches/${batch.id}/cancel`],
      ['GET', `/v1/threads/${thread.id}`],
      ['POST', `/v1/threads/${thread.id}/messages`],
    ]) {
      expect((await raw(gw, method, pathname, { key: globex.key, body: method === 'POST' ? { role: 'user', content: 'hi' } : undefined })).status, `${method} ${pathname}`).toBe(404);
    }
    const stolen = await raw(gw, 'POST', '/v1/batches', { key: globex.key, body: { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' } });
    expect(expectErrorShape(stolen, 404, 'file_not_found').param).toBe('input_file_id');
    const error = await gw.client(globex.key).batches.retrieve(batch.id).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    // Nor can another account's file be read through a model: a chat file part or a Responses input_file.
    const chatWithFile = await raw(gw, 'POST', '/v1/chat/completions', {
      key: globex.key,
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: file.id } }, { type: 'text', text: 'summarise' }] }] },
    });
    expect(expectErrorShape(chatWithFile, 404, 'file_not_found').param).toBe('messages[0].content[0].file.file_id');
    const responseWithFile = await raw(gw, 'POST', '/v1/responses', {
      key: globex.key,
      body: { model: 'gpt-4o', input: [{ role: 'user', content: [{ type: 'input_file', file_id: file.id }] }] },
    });
    expectErrorShape(responseWithFile, 404, 'file_not_found');
    // None of it reached the upstream.
    expect(store.requests.length).toBe(seen);
    // The owner may.
    const own = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: file.id } }] }] });
    expect(own.model).toBe('gpt-4o');
    // The upstream's listing covers every account (one credential): the gateway shows only the caller's.
    expect((await gw.client(globex.key).batches.list()).data.map((b) => b.id)).not.toContain(batch.id);
  });

  it('threads and assistants: the model checked and rewritten, the beta header passed on, ids routed', async () => {
    const assistant = await client.beta.assistants.create({ model: 'gpt-4o', name: 'helper' });
    expect(assistant.model).toBe('gpt-4o');
    const sent = store.requests.at(-1)!;
    expect(JSON.parse(sent.body).model).toBe('fake-gpt');
    expect(sent.headers['openai-beta']).toBe('assistants=v2');
    const thread = await client.beta.threads.create();
    const run = await client.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
    expect(run).toMatchObject({ object: 'thread.run', thread_id: thread.id, assistant_id: assistant.id });
    // Create-and-run: the thread it makes is routed too.
    const both = await client.beta.threads.createAndRun({ assistant_id: assistant.id });
    expect((await client.beta.threads.retrieve(both.thread_id)).id).toBe(both.thread_id);
    // A model served elsewhere cannot run objects kept here.
    const elsewhere = await raw(gw, 'POST', `/v1/threads/${thread.id}/runs`, { key: acme.key, body: { assistant_id: assistant.id, model: 'gpt-4o-mini' } });
    expect(expectErrorShape(elsewhere, 400).param).toBe('model');
    expect(await client.beta.threads.delete(thread.id)).toMatchObject({ deleted: true });
    expectErrorShape(await raw(gw, 'GET', `/v1/threads/${thread.id}`, { key: acme.key }), 404, 'thread_not_found');
    expect(chat.requests).toHaveLength(0);
  });

  it('refuses paths that could walk elsewhere on the upstream', async () => {
    const thread = await client.beta.threads.create();
    const seen = store.requests.length;
    expect((await raw(gw, 'GET', `/v1/threads/${thread.id}/..%2F..%2Ffiles`, { key: acme.key })).status).toBe(404);
    expect(store.requests.length).toBe(seen);
  });

  it('a free account keeps the gateway store exactly as before; batches stay a 400 for it', async () => {
    const seen = store.requests.length;
    const file = await gw.client(free.key).files.create({ file: await toFile(Buffer.from('local'), 'local.txt'), purpose: 'user_data' });
    expect(file.id).toMatch(LOCAL_FILE_ID);
    expect(await (await gw.client(free.key).files.content(file.id)).text()).toBe('local');
    expectErrorShape(await raw(gw, 'GET', '/v1/batches', { key: free.key }), 400, 'unsupported_for_model');
    expect(store.requests.length).toBe(seen);
  });
});

describe('routed ids across a restart', () => {
  it('a new gateway on the same data directory routes the same ids, still per account', async () => {
    const store = await startFakeUpstream('store');
    const manifests = [filesUpstream('store', store.url), model('gpt-4o', [{ upstream: 'store' }]), plan('pro', ['gpt-4o']), account('acme', 'pro'), account('globex', 'pro'), apiKey(acme), apiKey(globex)];
    const first = await startTestGateway(manifests);
    const dataDir = path.join(first.dir, 'data');
    let second: TestGateway | undefined;
    let firstOpen = true;
    try {
      const file = await first.client(acme.key).files.create({ file: await toFile(Buffer.from('durable'), 'durable.txt'), purpose: 'user_data' });
      await first.close();
      firstOpen = false;
      second = await startTestGateway(manifests, { dataDir });
      expect(await (await second.client(acme.key).files.content(file.id)).text()).toBe('durable');
      expectErrorShape(await raw(second, 'GET', `/v1/files/${file.id}`, { key: globex.key }), 404, 'file_not_found');
    } finally {
      if (firstOpen) await first.close();
      await second?.stop();
      await rm(first.dir, { recursive: true, force: true });
      await store.close();
    }
  });
});
