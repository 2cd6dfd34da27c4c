// TCP-level faults a client cannot tell from a real outage: a server that accepts connections and
// never answers (a hung process, a stalled API server), and a proxy that forwards until it is told
// to go silent, after which the connections it holds carry nothing either way and new ones are
// accepted and never answered: to the client, peers that vanished without a FIN or an RST (half-open).
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SilentServer {
  port: number;
  url: string;
  /** Connections accepted so far. */
  accepted: number;
  /** Connections open now. */
  readonly open: number;
  close(): Promise<void>;
}

/** Accepts every connection, reads what comes and never writes a byte. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    silent.accepted += 1;
    sockets.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
  });
  const silent = {
    accepted: 0,
    get open() {
      return sockets.size;
    },
  } as SilentServer;
  await listen(server);
  silent.port = (server.address() as AddressInfo).port;
  silent.url = `http://127.0.0.1:${silent.port}`;
  silent.close = () => closeAll(server, sockets);
  return silent;
}

export interface FaultProxy {
  port: number;
  url: string;
  /** Connections forwarded while the proxy was passing traffic. */
  forwarded: number;
  /** From now on nothing is forwarded on any connection, old or new; every socket stays open. */
  goSilent(): void;
  close(): Promise<void>;
}

/** Forwards TCP to `targetPort` on loopback until goSilent(). */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  let silent = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    if (silent) return client.on('data', () => undefined);
    proxy.forwarded += 1;
    const target = createConnection({ port: targetPort, host: '127.0.0.1' });
    track(target);
    // Data flows only while not silent; after that it is read and dropped, and nothing closes.
    client.on('data', (chunk) => (silent ? undefined : target.write(chunk)));
    target.on('data', (chunk) => (silent ? undefined : client.write(chunk)));
    client.once('end', () => (silent ? undefined : target.end()));
    target.once('end', () => (silent ? undefined : client.end()));
    client.once('close', () => (silent ? undefined : target.destroy()));
    target.once('close', () => (silent ? undefined : client.destroy()));
  });
  const proxy = {
    forwarded: 0,
    goSilent: () => {
      silent = true;
    },
  } as FaultProxy;
  await listen(server);
  proxy.port = (server.address() as AddressInfo).port;
  proxy.url = `http://127.0.0.1:${proxy.port}`;
  proxy.close = () => closeAll(server, sockets);
  return proxy;
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
}

function closeAll(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
