// The metrics listener, on its own port (TOLLGATE_METRICS_PORT) so that scrapes never queue behind
// client traffic and the port need not be exposed where the API is: `GET /metrics` for Prometheus
// (OpenMetrics, with exemplars, when the scraper asks for it) and `GET /usage` for the operator.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, type RegistryContentType } from 'prom-client';
import type { GatewayMetrics } from './metrics.ts';
import type { ClusterUsage, UsageLedger } from './usage-ledger.ts';

export interface MetricsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  port: number;
  host: string;
  metrics: GatewayMetrics | null;
  usage: UsageLedger;
  /** Set when a shared store holds the cluster's usage (Redis): `/usage` then answers scope `cluster`. */
  clusterUsage?: ClusterUsage;
  /** `GET /usage/days?account=<name>`: this process's month per day and model, and each key's last use and spend (the account area merges every replica's). */
  accountDays?: (account: string) => unknown;
  onError(error: Error): void;
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const exposition = options.metrics ? new Exposition(options.metrics.registry) : null;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const error = (status: number, code: string, message: string) =>
      answer(status, 'application/json', JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }));
    if (req.method !== 'GET' && req.method !== 'HEAD') return error(405, 'method_not_allowed', `Method ${req.method} is not allowed; use GET.`);
    if (path === '/metrics') {
      if (!exposition) return error(404, 'metrics_disabled', 'Metrics are switched off (TOLLGATE_METRICS_PORT=off).');
      const openMetrics = wantsOpenMetrics(req.headers.accept);
      exposition.render(openMetrics).then(
        (text) => answer(200, openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE, text),
        (failure: Error) => {
          options.onError(failure);
          error(500, 'internal_error', 'The metrics could not be collected.');
        },
      );
      return;
    }
    if (path === '/usage') {
      options.usage.report(options.clusterUsage).then(
        (report) => answer(200, 'application/json', JSON.stringify(report)),
        (failure: Error) => {
          options.onError(failure);
          error(503, 'usage_unavailable', 'The cluster-wide usage could not be read from the shared store.');
        },
      );
      return;
    }
    if (path === '/usage/days' && options.accountDays) {
      const account = new URL(req.url ?? '/', 'http://x').searchParams.get('account');
      if (!account) return error(400, 'missing_account', 'Name the account: /usage/days?account=<name>.');
      return answer(200, 'application/json', JSON.stringify(options.accountDays(account)));
    }
    error(404, 'unknown_url', `Invalid URL (${req.method} ${path}); this port serves /metrics and /usage.`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  server.on('error', options.onError);
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Prometheus asks for OpenMetrics first in its Accept header; exemplars exist only in that format. */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (!accept) return false;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'application/openmetrics-text') continue;
    const q = params.find((p) => p.startsWith('q='));
    if (!q || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/**
 * Renders the registry in either format. prom-client's registry has one format at a time, and
 * rendering OpenMetrics renames its counters in place (it drops their `_total`, which that format
 * adds back per sample): so renders are taken one at a time, and the names are put back after each.
 */
class Exposition {
  readonly #registry: Registry<RegistryContentType>;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(registry: Registry<RegistryContentType>) {
    this.#registry = registry;
  }

  render(openMetrics: boolean): Promise<string> {
    const next = this.#queue.then(async () => {
      const metrics = this.#registry.getMetricsAsArray() as unknown as Array<{ name: string }>;
      const names = metrics.map((metric) => metric.name);
      this.#registry.setContentType(openMetrics ? Registry.OPENMETRICS_CONTENT_TYPE : Registry.PROMETHEUS_CONTENT_TYPE);
      try {
        return await this.#registry.metrics();
      } finally {
        metrics.forEach((metric, i) => (metric.name = names[i]));
      }
    });
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
