// A list abandoned through its signal closes its connection: the signal reaches client-node's fetch
// (withSignal), so a stopped reflector leaves nothing open on an API server that never answers.
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from './kube-client.ts';

const sockets: Socket[] = [];
const closed: Socket[] = [];
const silent = createServer((socket) => {
  sockets.push(socket);
  socket.on('data', () => undefined);
  socket.on('error', () => undefined);
  socket.once('close', () => closed.push(socket));
});
let config: KubeConfig;

beforeAll(async () => {
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const server = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'silent', server, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'silent', user: 'u', namespace: 'ai' }],
    currentContext: 'c',
  });
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('createKubeClient lists', () => {
  for (const [name, collection] of [
    ['tollgate kinds', (c: ReturnType<typeof createKubeClient>) => c.tollgate('Plan')],
    ['Secrets', (c: ReturnType<typeof createKubeClient>) => c.secrets()],
    ['EndpointSlices', (c: ReturnType<typeof createKubeClient>) => c.endpointSlices('tollgate')],
  ] as const) {
    it(`${name}: aborting the signal rejects the list and closes its connection`, async () => {
      const before = { accepted: sockets.length, closed: closed.length };
      const controller = new AbortController();
      const list = collection(createKubeClient(config, 'ai')).list(controller.signal);
      const outcome = list.then(
        () => 'answered',
        () => 'rejected',
      );
      await until(() => sockets.length > before.accepted);
      controller.abort(new Error('stopped'));
      expect(await outcome).toBe('rejected');
      await until(() => closed.length > before.closed);
    });
  }
});
