import { appendFile, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileResponseStore } from './file-response-store.ts';

const log = { error: () => {}, warn: () => {} };

describe('FileResponseStore', () => {
  const dirs: string[] = [];
  const stores: Array<FileResponseStore<unknown>> = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });
  async function fileIn(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-responses-'));
    dirs.push(dir);
    return path.join(dir, 'responses', 'responses.jsonl');
  }
  function open<T>(file: string, options: ConstructorParameters<typeof FileResponseStore<T>>[2] = {}): FileResponseStore<T> {
    const store = new FileResponseStore<T>(file, log, options);
    stores.push(store as FileResponseStore<unknown>);
    return store;
  }

  it('gives back after a restart what was stored and not deleted, for its account only', async () => {
    const file = await fileIn();
    const first = open<{ text: string }>(file);
    expect(await first.put('acme', 'resp_1', { text: 'one' }, 10)).toBe(true);
    await first.put('acme', 'resp_2', { text: 'two' }, 10);
    await first.put('zeta', 'resp_3', { text: 'three' }, 10);
    expect(await first.delete('acme', 'resp_2')).toBe(true);
    expect(await first.delete('acme', 'resp_3')).toBe(false);
    await first.close();

    const second = open<{ text: string }>(file);
    expect(await second.get('acme', 'resp_1')).toEqual({ text: 'one' });
    expect(await second.get('acme', 'resp_2')).toBeUndefined();
    expect(await second.get('acme', 'resp_3')).toBeUndefined();
    expect(await second.get('zeta', 'resp_3')).toEqual({ text: 'three' });
  });

  it('drops expired entries and a line cut short by a crash, and rewrites the file with what is live', async () => {
    const file = await fileIn();
    const first = open<string>(file, { ttlMs: 60_000 });
    await first.put('acme', 'resp_live', 'kept', 4);
    await first.close();
    // An entry that expired while the gateway was down, and half a line.
    await appendFile(file, `${JSON.stringify({ a: 'acme', i: 'resp_old', e: Date.now() - 1, b: 3, v: 'old' })}\n{"a":"acme","i":"resp_cut","e":`);
    const second = open<string>(file);
    expect(await second.get('acme', 'resp_live')).toBe('kept');
    expect(await second.get('acme', 'resp_old')).toBeUndefined();
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    expect(lines.map((line) => JSON.parse(line).i)).toEqual(['resp_live']);
  });

  it('applies its bounds again on replay: the oldest entries beyond them are gone', async () => {
    const file = await fileIn();
    const first = open<string>(file, { maxEntries: 2 });
    for (const id of ['a', 'b', 'c']) await first.put('acme', id, id, 1);
    await first.close();
    const second = open<string>(file, { maxEntries: 2 });
    expect([await second.get('acme', 'a'), await second.get('acme', 'b'), await second.get('acme', 'c')]).toEqual([undefined, 'b', 'c']);
  });

  it('compacts the file as it runs once it is mostly stale', async () => {
    const file = await fileIn();
    const store = open<string>(file);
    for (let i = 0; i < 1100; i++) {
      await store.put('acme', 'resp_same', `v${i}`, 2);
    }
    await store.close();
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    expect(lines.length).toBeLessThan(1100);
    expect(JSON.parse(lines.at(-1)!).v).toBe('v1099');
    expect(await open<string>(file).get('acme', 'resp_same')).toBe('v1099');
  });

  it('compacts by size too: a large entry replaced over and over leaves a file of about one', async () => {
    const file = await fileIn();
    const options = { compactSlackChars: 256 * 1024 };
    const store = open<string>(file, options);
    const big = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 40; i++) await store.put('acme', 'resp_big', `${i}${big}`, big.length);
    await store.close();
    // 40 lines of 64 KiB were written; the file is never more than twice the live entry plus the slack.
    expect((await stat(file)).size).toBeLessThan(2 * big.length + 256 * 1024 + 1024);
    expect((await open<string>(file, options).get('acme', 'resp_big'))?.startsWith('39x')).toBe(true);
  });
});
