import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Reflector, type KubeObject, type ObjectList, type WatchClient } from './reflector.ts';

interface OpenWatch {
  query: Record<string, unknown>;
  send(type: string, object: unknown): void;
  close(error?: unknown): void;
}

/** A scripted API: each list and each watch waits for the test to answer it. */
function scriptedApi() {
  const lists: Array<{ resolve(list: ObjectList): void; reject(error: unknown): void }> = [];
  const watches: OpenWatch[] = [];
  const watch: WatchClient = {
    async watch(_path, query, onEvent, done) {
      const controller = new AbortController();
      let ended = false;
      const close = (error: unknown = null) => {
        if (ended) return;
        ended = true;
        done(error);
      };
      controller.signal.addEventListener('abort', () => close(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      watches.push({ query, send: (type, object) => !ended && onEvent(type, object), close });
      return controller;
    },
  };
  const list = () => new Promise<ObjectList>((resolve, reject) => lists.push({ resolve, reject }));
  return { lists, watches, watch, list };
}

const object = (name: string, resourceVersion: string): KubeObject => ({ metadata: { name, resourceVersion } });
const listOf = (resourceVersion: string, ...items: KubeObject[]): ObjectList => ({ metadata: { resourceVersion }, items });

async function until(condition: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function reflectorOn(api: ReturnType<typeof scriptedApi>, changes: { count: number; names?: string[] }) {
  return new Reflector({
    kind: 'Plan',
    path: '/plans',
    list: api.list,
    watch: api.watch,
    log: pino({ level: 'silent' }),
    relistIntervalMs: 0,
    backoff: { initialMs: 1, maxMs: 4 },
    onChange: () => changes.count++,
    onObject: (name) => changes.names?.push(name),
  });
}

describe('Reflector', () => {
  it('lists, watches from the list resourceVersion, follows events, and resumes from the last bookmark', async () => {
    const api = scriptedApi();
    const changes = { count: 0 };
    const reflector = reflectorOn(api, changes);
    reflector.start();
    await until(() => api.lists.length === 1);
    api.lists[0].resolve(listOf('10', object('a', '5')));
    await until(() => api.watches.length === 1);
    expect(reflector.synced).toBe(true);
    expect(api.watches[0].query).toMatchObject({ resourceVersion: '10', allowWatchBookmarks: true });
    api.watches[0].send('ADDED', object('b', '11'));
    api.watches[0].send('MODIFIED', object('a', '12'));
    api.watches[0].send('DELETED', object('b', '13'));
    api.watches[0].send('BOOKMARK', { metadata: { resourceVersion: '20' } });
    expect([...reflector.objects.keys()]).toEqual(['a']);
    expect(reflector.objects.get('a')!.metadata!.resourceVersion).toBe('12');
    expect(changes.count).toBe(4);
    api.watches[0].close();
    await until(() => api.watches.length === 2);
    expect(api.watches[1].query.resourceVersion).toBe('20');
    expect(api.lists).toHaveLength(1);
    await reflector.stop();
  });

  it('watches with the field and label selectors it was given', async () => {
    const api = scriptedApi();
    const reflector = new Reflector({ kind: 'Lease', path: '/leases', list: api.list, watch: api.watch, log: pino({ level: 'silent' }), relistIntervalMs: 0, fieldSelector: 'metadata.name=tollgate-operator', labelSelector: 'app=tollgate', onChange: () => undefined });
    reflector.start();
    await until(() => api.lists.length === 1);
    api.lists[0].resolve(listOf('10'));
    await until(() => api.watches.length === 1);
    expect(api.watches[0].query).toMatchObject({ fieldSelector: 'metadata.name=tollgate-operator', labelSelector: 'app=tollgate' });
    await reflector.stop();
  });

  it('on 410 Gone lists again and drops what the new list no longer holds, naming each object that changed', async () => {
    const api = scriptedApi();
    const changes = { count: 0, names: [] as string[] };
    const reflector = reflectorOn(api, changes);
    reflector.start();
    await until(() => api.lists.length === 1);
    api.lists[0].resolve(listOf('10', object('a', '1'), object('b', '2')));
    await until(() => api.watches.length === 1);
    api.watches[0].send('ERROR', { kind: 'Status', code: 410, message: 'too old resource version' });
    await until(() => api.lists.length === 2);
    api.lists[1].resolve(listOf('30', object('a', '1'), object('c', '25')));
    await until(() => api.watches.length === 2);
    expect([...reflector.objects.keys()].sort()).toEqual(['a', 'c']);
    expect(api.watches[1].query.resourceVersion).toBe('30');
    expect(changes.count).toBe(2);
    // The first list names both; the relist names only what it changed: c added, b gone (a unchanged).
    expect(changes.names).toEqual(['a', 'b', 'c', 'b']);
    await reflector.stop();
  });

  it('a relist asked for while a list is in flight gets a list of its own before any watch', async () => {
    const api = scriptedApi();
    const reflector = reflectorOn(api, { count: 0 });
    reflector.start();
    await until(() => api.lists.length === 1);
    const listed = reflector.nextList();
    reflector.relist();
    api.lists[0].resolve(listOf('10'));
    await until(() => api.lists.length === 2);
    expect(api.watches).toHaveLength(0);
    let resolved = false;
    void listed.then(() => (resolved = true));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(resolved).toBe(false);
    api.lists[1].resolve(listOf('11'));
    await listed;
    await until(() => api.watches.length === 1);
    expect(api.watches[0].query.resourceVersion).toBe('11');
    await reflector.stop();
  });

  it('retries failed lists and watches with backoff, without end', async () => {
    const api = scriptedApi();
    const reflector = reflectorOn(api, { count: 0 });
    reflector.start();
    for (let i = 0; i < 3; i++) {
      await until(() => api.lists.length === i + 1);
      api.lists[i].reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    }
    await until(() => api.lists.length === 4);
    api.lists[3].resolve(listOf('7'));
    await until(() => api.watches.length === 1);
    api.watches[0].send('ERROR', { kind: 'Status', code: 500, message: 'internal error' });
    await until(() => api.watches.length === 2);
    expect(api.watches[1].query.resourceVersion).toBe('7');
    // A watch that the server closes at once, silently, is retried with backoff too, not in a tight loop.
    api.watches[1].close();
    await until(() => api.watches.length === 3);
    await reflector.stop();
    expect(api.lists).toHaveLength(4);
  });
  it('stop() abandons a list the API server never answers: it resolves at once and the list is handed an aborted signal', async () => {
    const signals: AbortSignal[] = [];
    const hung = { ...scriptedApi(), list: (signal?: AbortSignal) => (signals.push(signal!), new Promise<ObjectList>(() => undefined)) };
    const reflector = reflectorOn(hung, { count: 0 });
    reflector.start();
    await until(() => signals.length === 1);
    expect(signals[0].aborted).toBe(false);
    const started = performance.now();
    await reflector.stop();
    expect(performance.now() - started).toBeLessThan(500);
    expect(signals[0].aborted).toBe(true);
    expect(reflector.synced).toBe(false);
  });
});
