// service-test's uploaded files in shared mode: three gateway processes and one real redis-server. A
// file uploaded through one replica is listed, retrieved, downloaded, used as a file input and
// deleted through the others; each account's bound (files and bytes) holds across all replicas
// together and answers the documented error; nothing of a refused upload stays in Redis.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, expectErrorShape, newKey, raw, toYaml } from '../helpers/gateway.ts';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const MAX_BYTES = 3 * 1024 * 1024;
const MAX_COUNT = 4;
const keys = {
  share: newKey('share-key', 'share-acct'),
  other: newKey('other-key', 'other-acct'),
  count: newKey('count-key', 'count-acct'),
  bytes: newKey('bytes-key', 'bytes-acct'),
  race: newKey('race-key', 'race-acct'),
  raceCount: newKey('race-count-key', 'race-count-acct'),
  expiry: newKey('expiry-key', 'expiry-acct'),
};

let redis: TestRedis;
let dir: string;
let gateways: GatewayProcess[] = [];

const sha256 = (bytes: Buffer | Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const client = (gateway: GatewayProcess, key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
const upload = async (gateway: GatewayProcess, key: string, bytes: Buffer, name = 'f.txt') =>
  client(gateway, key).files.create({ file: await toFile(bytes, name, { type: 'text/plain' }), purpose: 'user_data' });

function uploadForm(bytes: Buffer, name = 'f.bin'): FormData {
  const form = new FormData();
  form.append('purpose', 'user_data');
  form.append('file', new Blob([new Uint8Array(bytes)], { type: 'application/octet-stream' }), name);
  return form;
}

/** Keys of uploads in progress or left behind: none once every request has ended. */
const uploadsInRedis = async () => (await redis.cli('--scan', '--pattern', 'tollgate:*:upload:*')).split('\n').filter(Boolean);

function twoPagePdf(): Buffer {
  return Buffer.from('%PDF-1.4\n1 0 obj << /Type /Pages /Count 2 >> endobj\n2 0 obj << /Type /Page >> endobj\n3 0 obj << /Type /Page >> endobj\n%%EOF\n', 'latin1');
}

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-redis-files-'));
  const configFile = path.join(dir, 'tollgate.yaml');
  const accounts = [...new Set(Object.values(keys).map((k) => k.account))];
  await writeFile(configFile, toYaml([...accounts.map((name) => account(name)), ...Object.values(keys).map(apiKey)]));
  const env = { TOLLGATE_REDIS_URL: redis.url, TOLLGATE_REDIS_TIMEOUT_MS: '3000', TOLLGATE_REDIS_FILES_MAX_BYTES: String(MAX_BYTES), TOLLGATE_REDIS_FILES_MAX_COUNT: String(MAX_COUNT) };
  gateways = await Promise.all([0, 1, 2].map(() => startGatewayProcess(configFile, env)));
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.kill('SIGKILL')));
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('service-test files shared through Redis', () => {
  it('upload on one replica; list, retrieve, download, use and delete on the others', async () => {
    const [a, b, c] = gateways;
    // Larger than one chunk, so upload and download both go in several pieces.
    const bytes = randomBytes(2 * 1024 * 1024 + 12_345);
    const big = await upload(a, keys.share.key, bytes, 'big.bin');
    const pdf = await client(a, keys.share.key).files.create({ file: await toFile(twoPagePdf(), 'doc.pdf', { type: 'application/pdf' }), purpose: 'user_data' });
    expect(big.bytes).toBe(bytes.length);

    const listed = await client(b, keys.share.key).files.list();
    expect(listed.data.map((f) => f.id)).toEqual([pdf.id, big.id]);
    expect(await client(c, keys.share.key).files.retrieve(big.id)).toEqual(big);
    const download = await raw(b, 'GET', `/v1/files/${big.id}/content`, { key: keys.share.key });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-length')).toBe(String(bytes.length));
    const downloaded = Buffer.from(await (await client(c, keys.share.key).files.content(big.id)).arrayBuffer());
    expect(sha256(downloaded)).toBe(sha256(bytes));

    // A file id as an input on another replica: chat file parts and Responses input_file.
    const chat = await client(b, keys.share.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: [{ type: 'text', text: 'Read' }, { type: 'file', file: { file_id: pdf.id } }] }] });
    expect(chat.choices[0].message.content).toContain("File 1 'doc.pdf' is application/pdf");
    expect(chat.choices[0].message.content).toContain('2 pages');
    const response = await client(c, keys.share.key).responses.create({ model: 'service-test', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Read' }, { type: 'input_file', file_id: big.id }] }] });
    expect(response.output_text).toContain(`File 1 'big.bin'`);
    expect(response.output_text).toContain(`${bytes.length.toLocaleString('en-US')} bytes`);

    // Another account sees none of it, on any replica.
    expect((await client(c, keys.other.key).files.list()).data).toEqual([]);
    expectErrorShape(await raw(a, 'GET', `/v1/files/${big.id}`, { key: keys.other.key }), 404, 'file_not_found');
    const foreign = await raw(b, 'POST', '/v1/chat/completions', { key: keys.other.key, body: { model: 'service-test', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: pdf.id } }] }] } });
    expect(expectErrorShape(foreign, 400, 'invalid_value').param).toBe('messages[0].content[0].file.file_id');

    // A deleted id still pages a listing as a cursor, on every replica.
    expect(await client(c, keys.share.key).files.delete(pdf.id)).toEqual({ id: pdf.id, object: 'file', deleted: true });
    expect((await raw(a, 'GET', `/v1/files?after=${pdf.id}`, { key: keys.share.key })).json.data.map((f: { id: string }) => f.id)).toEqual([big.id]);
    await client(a, keys.share.key).files.delete(big.id);
    for (const gateway of gateways) {
      expectErrorShape(await raw(gateway, 'GET', `/v1/files/${big.id}`, { key: keys.share.key }), 404, 'file_not_found');
      expectErrorShape(await raw(gateway, 'GET', `/v1/files/${big.id}/content`, { key: keys.share.key }), 404, 'file_not_found');
      expect((await client(gateway, keys.share.key).files.list()).data).toEqual([]);
    }
    // Nothing of the files is left in Redis but the account's (zeroed) totals and tombstones.
    expect(await redis.cli('EXISTS', `tollgate:{share-acct}:file:${big.id}`, `tollgate:{share-acct}:file:${big.id}:data`)).toBe('0');
    expect(await redis.cli('HMGET', 'tollgate:{share-acct}:files:totals', 'bytes', 'count')).toBe('0\n0');
  });

  it('bounds the number of files per account across replicas, with a clear error', async () => {
    for (let i = 0; i < MAX_COUNT; i++) await upload(gateways[i % 3], keys.count.key, Buffer.from(`file ${i}`));
    for (const gateway of gateways) {
      const refused = expectErrorShape(await raw(gateway, 'POST', '/v1/files', { key: keys.count.key, body: uploadForm(Buffer.from('one too many')) }), 400, 'file_storage_limit_exceeded');
      expect(refused.type).toBe('invalid_request_error');
      expect(refused.param).toBe('file');
      expect(refused.message).toContain(`${MAX_COUNT} of at most ${MAX_COUNT} files`);
    }
    // Deleting one makes room again, on any replica.
    const [first] = (await client(gateways[1], keys.count.key).files.list()).data;
    await client(gateways[2], keys.count.key).files.delete(first.id);
    expect((await upload(gateways[0], keys.count.key, Buffer.from('fits again'))).bytes).toBe(10);
    expect(await uploadsInRedis()).toEqual([]);
  });

  it('bounds the bytes per account: a file that does not fit is refused and nothing of it stays', async () => {
    await upload(gateways[0], keys.bytes.key, randomBytes(2 * 1024 * 1024));
    // The second would take the account past its bytes, though each file alone fits.
    const tooMuch = await raw(gateways[1], 'POST', '/v1/files', { key: keys.bytes.key, body: uploadForm(randomBytes(1024 * 1024 + 1)) });
    expect(expectErrorShape(tooMuch, 400, 'file_storage_limit_exceeded').message).toContain(`of at most ${MAX_BYTES.toLocaleString('en-US')} bytes`);
    expect((await client(gateways[2], keys.bytes.key).files.list()).data).toHaveLength(1);
    expect(await uploadsInRedis()).toEqual([]);
    // What does fit still goes in.
    await upload(gateways[2], keys.bytes.key, randomBytes(1024 * 1024));
    expect(await redis.cli('HGET', 'tollgate:{bytes-acct}:files:totals', 'bytes')).toBe(String(3 * 1024 * 1024));
  });

  it('lets exactly as many concurrent uploads in as the bound has room for', async () => {
    // Room for exactly two files of this size, raced from three replicas at once, six uploads.
    const size = 1024 * 1024 + 1;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => raw(gateways[i % 3], 'POST', '/v1/files', { key: keys.race.key, body: uploadForm(randomBytes(size)) })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    for (const refused of answers.filter((a) => a.status !== 200)) expectErrorShape(refused, 400, 'file_storage_limit_exceeded');
    expect(await redis.cli('HMGET', 'tollgate:{race-acct}:files:totals', 'bytes', 'count')).toBe(`${2 * size}\n2`);
    // The same for the number of files: room for one more, six small uploads at once.
    for (let i = 0; i < MAX_COUNT - 1; i++) await upload(gateways[i % 3], keys.raceCount.key, Buffer.from(`file ${i}`));
    const small = await Promise.all(Array.from({ length: 6 }, (_, i) => raw(gateways[i % 3], 'POST', '/v1/files', { key: keys.raceCount.key, body: uploadForm(Buffer.from(`racer ${i}`)) })));
    expect(small.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
    expect((await client(gateways[0], keys.raceCount.key).files.list()).data).toHaveLength(MAX_COUNT);
    expect(await uploadsInRedis()).toEqual([]);
  });

  it('forgets a file once its expiry has passed, and gives its room back', async () => {
    const expiring = await client(gateways[0], keys.expiry.key).files.create({ file: await toFile(Buffer.from('soon gone'), 'soon.txt'), purpose: 'batch', expires_after: { anchor: 'created_at', seconds: 3600 } });
    expect(expiring.expires_at).toBe(expiring.created_at + 3600);
    expect((await client(gateways[1], keys.expiry.key).files.retrieve(expiring.id)).id).toBe(expiring.id);
    // An hour is too long to wait: move its expiry into the past, as time would.
    await redis.cli('ZADD', 'tollgate:{expiry-acct}:files:expiries', '1', expiring.id);
    expect((await client(gateways[1], keys.expiry.key).files.list()).data).toEqual([]);
    expectErrorShape(await raw(gateways[2], 'GET', `/v1/files/${expiring.id}`, { key: keys.expiry.key }), 404, 'file_not_found');
    expect(await redis.cli('HMGET', 'tollgate:{expiry-acct}:files:totals', 'bytes', 'count')).toBe('0\n0');
  });

  it('answers 503 store_unavailable while Redis is away, and serves the files again after', async () => {
    const kept = await upload(gateways[0], keys.other.key, Buffer.from('kept'));
    await redis.stop();
    try {
      await waitFor(async () => (await raw(gateways[1], 'GET', '/v1/files', { key: keys.other.key })).status === 503, 10_000, 'a 503 while Redis is down');
      const refused = await raw(gateways[2], 'POST', '/v1/files', { key: keys.other.key, body: uploadForm(Buffer.from('x')) });
      expect(expectErrorShape(refused, 503, 'store_unavailable').type).toBe('server_error');
    } finally {
      await redis.start();
    }
    // Redis without persistence lost everything: the gateway still answers, from an empty store.
    await waitFor(async () => (await raw(gateways[1], 'GET', '/v1/files', { key: keys.other.key })).status === 200, 10_000, 'files again after the restart');
    expectErrorShape(await raw(gateways[1], 'GET', `/v1/files/${kept.id}`, { key: keys.other.key }), 404, 'file_not_found');
  });
});
