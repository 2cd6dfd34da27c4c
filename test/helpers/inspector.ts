// A Node.js process's V8 inspector (started with --inspect), driven over the Chrome DevTools Protocol
// on its WebSocket: a full garbage collection on demand (the memory suite), or any other method
// (bench/gc-compare.ts's heap sampling).
export interface Inspector {
  /** One protocol method; resolves with its result. */
  call(method: string, params?: object): Promise<any>;
  /** A full collection in the process's main thread (HeapProfiler.collectGarbage); resolves when it is done. */
  collectGarbage(): Promise<void>;
  close(): void;
}

/** The inspector's address as Node prints it on stderr at start ("Debugger listening on ws://…"), or null. */
export function inspectorURLIn(text: string): string | null {
  return /ws:\/\/\S+/.exec(text)?.[0] ?? null;
}

export async function connectInspector(url: string): Promise<Inspector> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id === undefined) return;
    pending.get(message.id)?.(message.result);
    pending.delete(message.id);
  });
  const call = (method: string, params: object = {}) =>
    new Promise<any>((resolve) => {
      pending.set(++id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { call, collectGarbage: () => call('HeapProfiler.collectGarbage'), close: () => socket.close() };
}
