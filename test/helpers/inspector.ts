// A gateway process's V8 inspector (started with --inspect), driven over the Chrome DevTools Protocol
// on its WebSocket: what a test needs from it, a full garbage collection on demand.
export interface Inspector {
  /** A full collection in the gateway's main thread (HeapProfiler.collectGarbage); resolves when it is done. */
  collectGarbage(): Promise<void>;
  close(): void;
}

export async function connectInspector(url: string): Promise<Inspector> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), { once: true });
    socket.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
  });
  let id = 0;
  const pending = new Map<number, () => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number };
    if (message.id === undefined) return;
    pending.get(message.id)?.();
    pending.delete(message.id);
  });
  const call = (method: string) =>
    new Promise<void>((resolve) => {
      pending.set(++id, resolve);
      socket.send(JSON.stringify({ id, method }));
    });
  return { collectGarbage: () => call('HeapProfiler.collectGarbage'), close: () => socket.close() };
}
