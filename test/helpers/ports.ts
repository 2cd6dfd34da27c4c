// A free TCP port on loopback, for servers the tests start that cannot listen on port 0 themselves
// (redis-server, prometheus, a gateway's metrics port that an EndpointSlice must name in advance).
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
