// /healthz (the process answers), /readyz (every informer has listed: a replica that cannot see the
// cluster is not ready, leader or not) and /metrics, on TOLLGATE_OPERATOR_PORT.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorMetrics } from './metrics.ts';

export interface Health {
  ready(): { ready: boolean; waitingFor: string[]; leader: boolean };
}

export async function startHttpServer(port: number, host: string, metrics: OperatorMetrics, health: Health): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'method not allowed' });
    if (path === '/healthz') return json(200, { status: 'ok' });
    if (path === '/readyz') {
      const state = health.ready();
      return json(state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'loading', ...state });
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        },
        () => json(500, { error: 'metrics failed' }),
      );
      return;
    }
    json(404, { error: 'not found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return { server, port: (server.address() as AddressInfo).port };
}
