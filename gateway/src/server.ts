// Assembles a gateway: resources, app, HTTP server. Used by main.ts and by every test (port 0).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { GatewayDeps } from './deps.ts';
import { createApp } from './http/app.ts';
import { ensureDemoKey, prepareConfigFile } from './resources/bootstrap.ts';
import { FileSource } from './resources/file-source.ts';
import type { KubernetesSource } from './resources/kubernetes-source.ts';
import { SINGLE_REPLICA, type ReplicaCount } from './resources/replicas.ts';
import { ResourceStore } from './resources/store.ts';
import { createUpstreamRuntime } from './upstream/runtime.ts';
import { createPlanLimits } from './limits/plan-limits.ts';
import { createSharedStores, type SharedStores } from './storage/shared-store.ts';

export interface RunningGateway {
  url: string;
  port: number;
  server: Server;
  store: ResourceStore;
  /** The manifest file, or the Kubernetes API (TOLLGATE_SOURCE); both offer reload() and status.lastError. */
  source: FileSource | KubernetesSource;
  /** Live gateway replicas: ready endpoints of the Service in Kubernetes, 1 in file mode. */
  replicas: ReplicaCount;
  /** The demo key minted on this start, if any; shown once by main.ts, never logged. */
  demoKey: string | null;
  /** Shared mode (TOLLGATE_REDIS_URL): the Redis-backed stores; null in single-process mode. */
  shared: SharedStores | null;
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, log: Logger): Promise<RunningGateway> {
  await mkdir(config.dataDir, { recursive: true });
  const kubernetes = config.source === 'kubernetes';
  if (!kubernetes) await prepareConfigFile(config);
  const demoKey = kubernetes ? null : await ensureDemoKey(config);

  const store = new ResourceStore();
  // Imported only when used: client-node takes half a second to load, which file mode need not pay.
  const source = kubernetes
    ? (await import('./resources/kubernetes-source.ts')).KubernetesSource.fromConfig(config, store, log)
    : new FileSource(config.configFile, store, log, config.reloadPollMs);
  // The file source has loaded on return; the Kubernetes source keeps /readyz at 503 until it has listed.
  await source.start();
  const replicas: ReplicaCount = 'replicas' in source ? source.replicas : SINGLE_REPLICA;

  const closeHooks: Array<() => void | Promise<void>> = [];
  const upstreams = createUpstreamRuntime(store, config.breaker, process.env, 'secretLookup' in source ? source.secretLookup : undefined);
  closeHooks.push(() => upstreams.close());
  const shared = config.redis ? createSharedStores(config.redis, log) : null;
  // With a shared store every replica enforces the whole limit against the same counters; without
  // one, each enforces its share of it.
  const limitReplicas = shared ? () => 1 : () => replicas.current();
  const limits = await createPlanLimits({ dataDir: config.dataDir, log, clock: config.clock, ...config.limits, replicas: limitReplicas, store: shared?.limitStore });
  closeHooks.push(() => limits.close());
  const deps: GatewayDeps = { config, store, log, upstreams, limits, replicas, onClose: (hook) => closeHooks.push(hook) };
  const app = createApp(deps);
  const server = createServer(app.callback());
  // Long streams and large uploads are normal here; Node's 5-minute request timeout is not wanted.
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    store,
    source,
    replicas,
    demoKey,
    shared,
    async close() {
      await source.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const hook of closeHooks) await hook();
      // Last: settlements of requests that ended during shutdown still reach Redis.
      await shared?.close();
    },
  };
}
