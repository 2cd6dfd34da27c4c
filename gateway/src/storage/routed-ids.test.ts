import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RoutedIds } from './routed-ids.ts';

describe('RoutedIds', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'routed-ids-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('maps (account, id) to its upstream; another account does not see it', async () => {
    const routes = new RoutedIds(dir);
    await routes.remember('acme', 'file-1', { upstream: 'store', kind: 'file' });
    expect(await routes.lookup('acme', 'file-1')).toEqual({ upstream: 'store', kind: 'file' });
    expect(await routes.lookup('globex', 'file-1')).toBeUndefined();
    await routes.forget('acme', 'file-1');
    expect(await routes.lookup('acme', 'file-1')).toBeUndefined();
  });

  it('replays its log after a restart, skipping a line cut short by a crash', async () => {
    const first = new RoutedIds(dir);
    await first.remember('acme', 'file-1', { upstream: 'store', kind: 'file' });
    await first.remember('acme', 'batch_1', { upstream: 'store', kind: 'batch' });
    await first.forget('acme', 'file-1');
    await first.flush();
    await writeFile(first.file, `${await readFile(first.file, 'utf8')}{"a":"acme","i":"thr`);
    const second = new RoutedIds(dir);
    expect(await second.lookup('acme', 'batch_1')).toEqual({ upstream: 'store', kind: 'batch' });
    expect(await second.lookup('acme', 'file-1')).toBeUndefined();
  });

  it('compacts a log that is mostly stale at start-up', async () => {
    const first = new RoutedIds(dir);
    for (let i = 0; i < 800; i++) {
      await first.remember('acme', `file-${i}`, { upstream: 'store', kind: 'file' });
      await first.forget('acme', `file-${i}`);
    }
    await first.remember('acme', 'kept', { upstream: 'store', kind: 'file' });
    await first.flush();
    const second = new RoutedIds(dir);
    expect(await second.lookup('acme', 'kept')).toEqual({ upstream: 'store', kind: 'file' });
    expect((await readFile(second.file, 'utf8')).trim().split('\n')).toHaveLength(1);
  });

  it('drops the oldest route past its bound, on disk too', async () => {
    const routes = new RoutedIds(dir, 2);
    for (const id of ['a', 'b', 'c']) await routes.remember('acme', id, { upstream: 'store', kind: 'file' });
    expect(await routes.lookup('acme', 'a')).toBeUndefined();
    expect(await new RoutedIds(dir, 2).lookup('acme', 'a')).toBeUndefined();
    expect(await new RoutedIds(dir, 2).lookup('acme', 'c')).toEqual({ upstream: 'store', kind: 'file' });
  });
});

describe('RoutedIds when a write fails', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'routed-ids-fail-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('reports the failed append and keeps persisting later ones', async () => {
    const errors: unknown[] = [];
    const routes = new RoutedIds(dir, { log: { error: (object: unknown) => void errors.push(object) } as never });
    await routes.remember('acme', 'file-1', { upstream: 'store', kind: 'file' });
    // The log file turned into a directory: the next append fails with EISDIR, as a full disk would fail it.
    await rm(routes.file);
    await mkdir(routes.file);
    await expect(routes.remember('acme', 'file-2', { upstream: 'store', kind: 'file' })).rejects.toThrow();
    expect(routes.writeFailures).toBe(1);
    expect(errors).toHaveLength(1);
    await rm(routes.file, { recursive: true });
    await routes.remember('acme', 'file-3', { upstream: 'store', kind: 'file' });
    await routes.flush();
    const restarted = new RoutedIds(dir);
    expect(await restarted.lookup('acme', 'file-3')).toEqual({ upstream: 'store', kind: 'file' });
  });
});
