import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { account, apiKey, expectErrorShape, newKey, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const alice = newKey('alice-key', 'alice-co');
const aliceSecond = newKey('alice-second-key', 'alice-co');
const bob = newKey('bob-key', 'bob-co');
const lister = newKey('lister-key', 'lister-co');
const cleaner = newKey('cleaner-key', 'cleaner-co');
const keys = [alice, aliceSecond, bob, lister, cleaner];
const manifests = [account('alice-co'), account('bob-co'), account('lister-co'), account('cleaner-co'), ...keys.map(apiKey)];

const FILE_ID = /^file-[A-Za-z0-9]{24}$/;

async function postForm(gw: { url: string }, key: string, form: FormData) {
  return raw(gw, 'POST', '/v1/files', { key, body: form });
}

function form(fields: Record<string, string>, file?: { field?: string; bytes: Buffer | string; name?: string; type?: string }): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  if (file) data.append(file.field ?? 'file', new Blob([typeof file.bytes === 'string' ? file.bytes : new Uint8Array(file.bytes)], { type: file.type ?? 'text/plain' }), file.name ?? 'data.txt');
  return data;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Waits on a condition with a bounded number of short polls; fails with a reason instead of hanging. */
async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function filesDir(gw: TestGateway): string {
  return path.join(gw.dir, 'data', 'files');
}

async function entriesOf(dir: string) {
  const names = await readdir(dir).catch(() => [] as string[]);
  return { names, parts: names.filter((n) => n.endsWith('.part')), blobs: names.filter((n) => n.endsWith('.bin')) };
}

describe('files through the SDK', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests);
  });
  afterAll(() => gw.stop());

  it('uploads with toFile and answers the full file record', async () => {
    const before = Math.floor(Date.now() / 1000);
    const record = await gw.client(alice.key).files.create({ file: await toFile(Buffer.from('{"a":1}\n'), 'input.jsonl', { type: 'application/jsonl' }), purpose: 'batch' });
    expect(record).toEqual({
      id: expect.stringMatching(FILE_ID),
      object: 'file',
      bytes: 8,
      created_at: expect.any(Number),
      filename: 'input.jsonl',
      purpose: 'batch',
      status: 'processed',
      expires_at: null,
      status_details: null,
    });
    expect(record.created_at).toBeGreaterThanOrEqual(before);
    expect(record.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(await gw.client(alice.key).files.retrieve(record.id)).toEqual(record);

    const content = await gw.client(alice.key).files.content(record.id);
    expect(await content.text()).toBe('{"a":1}\n');
    expect(content.headers.get('content-type')).toBe('application/jsonl');
    expect(content.headers.get('content-length')).toBe('8');
  });

  it('round-trips a binary file of several MB uploaded from fs.createReadStream', async () => {
    const bytes = randomBytes(6 * 1024 * 1024 + 123);
    const source = path.join(gw.dir, 'blob.bin');
    await writeFile(source, bytes);
    const record = await gw.client(alice.key).files.create({ file: createReadStream(source), purpose: 'user_data' });
    expect(record).toMatchObject({ bytes: bytes.length, filename: 'blob.bin', purpose: 'user_data' });

    const content = await gw.client(alice.key).files.content(record.id);
    const downloaded = Buffer.from(await content.arrayBuffer());
    expect(downloaded.length).toBe(bytes.length);
    expect(sha256(downloaded)).toBe(sha256(bytes));
    expect(content.headers.get('content-type')).toBe('application/octet-stream');
    expect(content.headers.get('content-length')).toBe(String(bytes.length));
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('any key of the same account sees the file; deleting removes it for good', async () => {
    const created = await gw.client(alice.key).files.create({ file: await toFile(Buffer.from('shared'), 'shared.txt'), purpose: 'assistants' });
    expect(await gw.client(aliceSecond.key).files.retrieve(created.id)).toMatchObject({ id: created.id });

    const deleted = await gw.client(aliceSecond.key).files.delete(created.id);
    expect(deleted).toEqual({ id: created.id, object: 'file', deleted: true });
    const error = await gw.client(alice.key).files.retrieve(created.id).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.code).toBe('file_not_found');
    expectErrorShape(await raw(gw, 'GET', `/v1/files/${created.id}/content`, { key: alice.key }), 404, 'file_not_found');
    expectErrorShape(await raw(gw, 'DELETE', `/v1/files/${created.id}`, { key: alice.key }), 404, 'file_not_found');
    const listed = await gw.client(alice.key).files.list();
    expect(listed.data.map((f) => f.id)).not.toContain(created.id);
    expect((await entriesOf(filesDir(gw))).names.filter((n) => n.startsWith(created.id))).toEqual([]);
  });

  it('keeps accounts apart: another account gets 404, and its listing does not show the file', async () => {
    const mine = await gw.client(alice.key).files.create({ file: await toFile(Buffer.from('private'), 'private.txt'), purpose: 'user_data' });
    for (const [method, suffix] of [['GET', ''], ['GET', '/content'], ['DELETE', '']] as const) {
      const error = expectErrorShape(await raw(gw, method, `/v1/files/${mine.id}${suffix}`, { key: bob.key }), 404, 'file_not_found');
      expect(error.message).toContain(mine.id);
    }
    expect((await gw.client(bob.key).files.list()).data.map((f) => f.id)).not.toContain(mine.id);
    // Bob's failed delete did not touch it.
    expect(await gw.client(alice.key).files.retrieve(mine.id)).toMatchObject({ id: mine.id });
    // Nor can bob use alice's id as a list cursor to learn that it exists.
    expectErrorShape(await raw(gw, 'GET', `/v1/files?after=${mine.id}`, { key: bob.key }), 400, 'invalid_value');
  });

  it('lists newest first, pages with after, filters by purpose, and auto-paginates through the SDK', async () => {
    const client = gw.client(lister.key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const purpose = i % 2 === 0 ? 'batch' : 'vision';
      ids.push((await client.files.create({ file: await toFile(Buffer.from(`file ${i}`), `f${i}.txt`), purpose })).id);
    }

    const firstPage = await raw(gw, 'GET', '/v1/files?limit=2', { key: lister.key });
    expect(firstPage.status).toBe(200);
    expect(firstPage.json).toMatchObject({ object: 'list', has_more: true, first_id: ids[4], last_id: ids[3] });
    expect(firstPage.json.data.map((f: { id: string }) => f.id)).toEqual([ids[4], ids[3]]);
    const lastPage = await raw(gw, 'GET', `/v1/files?limit=2&after=${ids[1]}`, { key: lister.key });
    expect(lastPage.json).toMatchObject({ data: [{ id: ids[0] }], has_more: false, first_id: ids[0], last_id: ids[0] });

    const all: string[] = [];
    for await (const file of client.files.list({ limit: 2 })) all.push(file.id);
    expect(all).toEqual([...ids].reverse());

    const ascending: string[] = [];
    for await (const file of client.files.list({ limit: 2, order: 'asc' })) ascending.push(file.id);
    expect(ascending).toEqual(ids);

    const batches: string[] = [];
    for await (const file of client.files.list({ purpose: 'batch', limit: 1 })) batches.push(file.id);
    expect(batches).toEqual([ids[4], ids[2], ids[0]]);

    const empty = await raw(gw, 'GET', '/v1/files?purpose=fine-tune', { key: lister.key });
    expect(empty.json).toEqual({ object: 'list', data: [], has_more: false, first_id: null, last_id: null });
  });

  it('"list everything and delete it" works even though each page cursor was just deleted', async () => {
    const client = gw.client(cleaner.key);
    for (let i = 0; i < 5; i++) await client.files.create({ file: await toFile(Buffer.from(`x${i}`), `x${i}.txt`), purpose: 'batch' });
    let deleted = 0;
    for await (const file of client.files.list({ limit: 2 })) {
      await client.files.delete(file.id);
      deleted++;
    }
    expect(deleted).toBe(5);
    expect((await client.files.list()).data).toEqual([]);
  });

  it('honours expires_after', async () => {
    const record = await gw.client(alice.key).files.create({
      file: await toFile(Buffer.from('soon gone'), 'expiring.txt'),
      purpose: 'batch',
      expires_after: { anchor: 'created_at', seconds: 3600 },
    });
    expect(record.expires_at).toBe(record.created_at + 3600);
  });
});

describe('files: refused requests', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests);
  });
  afterAll(() => gw.stop());

  it.each([
    ['no purpose', form({}, { bytes: 'x' }), 'purpose', 'missing_required_parameter'],
    ['an empty purpose', form({ purpose: '' }, { bytes: 'x' }), 'purpose', 'missing_required_parameter'],
    ['an unknown purpose', form({ purpose: 'fine-tune-results' }, { bytes: 'x' }), 'purpose', 'invalid_value'],
    ['no file', form({ purpose: 'batch' }), 'file', 'missing_required_parameter'],
    ['file as a text field', form({ purpose: 'batch', file: 'not a file' }), 'file', 'invalid_type'],
    ['an empty file', form({ purpose: 'batch' }, { bytes: '' }), 'file', 'empty_file'],
    ['a file under another name', form({ purpose: 'batch' }, { bytes: 'x', field: 'document' }), 'document', 'unknown_parameter'],
    ['an unknown field', form({ purpose: 'batch', colour: 'blue' }, { bytes: 'x' }), 'colour', 'unknown_parameter'],
    ['a bad expiry anchor', form({ purpose: 'batch', 'expires_after[anchor]': 'last_used', 'expires_after[seconds]': '3600' }, { bytes: 'x' }), 'expires_after.anchor', 'invalid_value'],
    ['a too short expiry', form({ purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '60' }, { bytes: 'x' }), 'expires_after.seconds', 'invalid_value'],
  ])('%s: 400 naming the parameter, and nothing stored', async (_label, body, param, code) => {
    const response = await postForm(gw, alice.key, body);
    const error = expectErrorShape(response, 400, code);
    expect(error.param).toBe(param);
    const { parts, blobs } = await entriesOf(filesDir(gw));
    expect(parts).toEqual([]);
    expect(blobs).toEqual([]);
  });

  it('two file parts: 400, and neither is kept', async () => {
    const body = form({ purpose: 'batch' }, { bytes: 'one' });
    body.append('file', new Blob(['two']), 'two.txt');
    expect(expectErrorShape(await postForm(gw, alice.key, body), 400, 'too_many_files').param).toBe('file');
    expect((await entriesOf(filesDir(gw))).names.filter((n) => !n.startsWith('.'))).toEqual([]);
  });

  it('a JSON body instead of multipart: 400', async () => {
    expectErrorShape(await raw(gw, 'POST', '/v1/files', { key: alice.key, body: { purpose: 'batch', file: 'x' } }), 400, 'invalid_content_type');
  });

  it('the SDK surfaces a refused upload as BadRequestError with the param', async () => {
    const error = await gw
      .client(alice.key)
      .files.create({ file: await toFile(Buffer.from('x'), 'x.txt'), purpose: 'nonsense' as 'batch' })
      .catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('purpose');
    expect(error.message).toContain("'user_data'");
  });

  it.each([
    ['a short id', '/v1/files/file-abc'],
    ['a well-formed id nobody owns', `/v1/files/file-${'A'.repeat(24)}`],
    ['path traversal', `/v1/files/${encodeURIComponent('../../tollgate.yaml')}`],
    ['path traversal to content', `/v1/files/${encodeURIComponent('../files')}/content`],
    ['a data file name', `/v1/files/file-${'A'.repeat(24)}.bin`],
  ])('%s: 404 file_not_found', async (_label, pathname) => {
    const error = expectErrorShape(await raw(gw, 'GET', pathname, { key: alice.key }), 404, 'file_not_found');
    expect(error.param).toBe('file_id');
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=10001', 'limit'],
    ['limit=ten', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['order=newest', 'order'],
    [`after=file-${'B'.repeat(24)}`, 'after'],
    ['after=../../etc', 'after'],
  ])('list with %s: 400 naming %s', async (query, param) => {
    expect(expectErrorShape(await raw(gw, 'GET', `/v1/files?${query}`, { key: alice.key }), 400, 'invalid_value').param).toBe(param);
  });

  it('needs a key', async () => {
    expectErrorShape(await raw(gw, 'GET', '/v1/files'), 401, 'invalid_api_key');
    expectErrorShape(await postForm(gw, 'tg_sk_' + 'x'.repeat(43), form({ purpose: 'batch' }, { bytes: 'x' })), 401, 'invalid_api_key');
  });
});

/** A multipart body that sends its head and some file bytes, then stalls until the test acts. */
function stalledUpload(boundary: string, firstChunk: Buffer) {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(head);
      c.enqueue(firstChunk);
    },
  });
  return { body, controller };
}

describe('files: interrupted and oversized uploads leave nothing behind', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests, { maxBodyBytes: 4 * 1024 * 1024 });
  });
  afterAll(() => gw.stop());

  it('a client that disconnects mid-upload leaves no partial file', async () => {
    const dir = filesDir(gw);
    const boundary = 'tollgate-test-boundary';
    const { body } = stalledUpload(boundary, randomBytes(512 * 1024));
    const abort = new AbortController();
    const request = fetch(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
      signal: abort.signal,
    } as RequestInit).catch((e) => e);

    // The bytes reach the disk while the upload is still running: streamed, not buffered.
    let partial = '';
    await waitFor(async () => {
      for (const name of (await entriesOf(dir)).parts) {
        const size = await stat(path.join(dir, name)).then((s) => s.size, () => 0);
        if (size > 0) partial = name;
      }
      return partial !== '';
    }, 'the temporary upload file to receive bytes');

    abort.abort();
    expect((await request).name).toBe('AbortError');
    await waitFor(async () => (await entriesOf(dir)).parts.length === 0, 'the temporary upload file to be removed');
    expect((await entriesOf(dir)).blobs).toEqual([]);
    expect((await gw.client(alice.key).files.list()).data).toEqual([]);
  });

  it('an undeclared (chunked) body past the limit is cut off with 413, and its bytes are removed', async () => {
    const dir = filesDir(gw);
    const boundary = 'tollgate-limit-boundary';
    const { body, controller } = stalledUpload(boundary, randomBytes(1024 * 1024));
    // More than the 4 MB limit, never declared in a Content-Length.
    for (let i = 0; i < 5; i++) controller.enqueue(randomBytes(1024 * 1024));
    controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
    controller.close();
    const response = await fetch(`${gw.url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit).catch((e) => e);
    // The server may close the connection before the client finishes sending; either way nothing stays.
    if (response instanceof Response) expect(response.status).toBe(413);
    await waitFor(async () => (await entriesOf(dir)).parts.length === 0, 'the temporary upload file to be removed');
    expect((await entriesOf(dir)).blobs).toEqual([]);
  });

  it('a declared Content-Length past the limit is refused before any byte is stored', async () => {
    const response = await postForm(gw, alice.key, form({ purpose: 'batch' }, { bytes: randomBytes(5 * 1024 * 1024) }));
    expectErrorShape(response, 413, 'request_too_large');
    expect((await entriesOf(filesDir(gw))).names.filter((n) => !n.startsWith('.'))).toEqual([]);
  });
});

describe('files survive a restart', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-files-data-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('a new gateway on the same data directory serves the same files, still scoped by account', async () => {
    const first = await startTestGateway(manifests, { dataDir });
    let kept: OpenAI.FileObject;
    const bytes = randomBytes(200_000);
    try {
      kept = await first.client(alice.key).files.create({ file: await toFile(bytes, 'kept.bin', { type: 'application/x-kept' }), purpose: 'fine-tune' });
    } finally {
      await first.stop();
    }
    // Leftovers of a crash: a half upload and bytes whose record was never written.
    const filesPath = path.join(dataDir, 'files');
    await writeFile(path.join(filesPath, '.upload-deadbeef.part'), 'half');
    await writeFile(path.join(filesPath, `file-${'Z'.repeat(24)}.bin`), 'orphan');

    const second = await startTestGateway(manifests, { dataDir });
    try {
      const client = second.client(alice.key);
      expect(await client.files.retrieve(kept.id)).toEqual(kept);
      const content = await client.files.content(kept.id);
      expect(sha256(Buffer.from(await content.arrayBuffer()))).toBe(sha256(bytes));
      expect(content.headers.get('content-type')).toBe('application/x-kept');
      expectErrorShape(await raw(second, 'GET', `/v1/files/${kept.id}`, { key: bob.key }), 404, 'file_not_found');

      // Order continues across the restart: the new upload lists first.
      const newer = await client.files.create({ file: await toFile(Buffer.from('newer'), 'newer.txt'), purpose: 'fine-tune' });
      expect((await client.files.list()).data.map((f) => f.id)).toEqual([newer.id, kept.id]);

      const names = await readdir(filesPath);
      expect(names).not.toContain('.upload-deadbeef.part');
      expect(names).not.toContain(`file-${'Z'.repeat(24)}.bin`);
      expect(names.sort()).toEqual([`${kept.id}.bin`, `${kept.id}.json`, `${newer.id}.bin`, `${newer.id}.json`].sort());
    } finally {
      await second.stop();
    }
  });
});
