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
import { ResourceStore } from './resources/store.ts';
import { createUpstreamRuntime } from './upstream/runtime.ts';
import { createPlanLimits } from './limits/plan-limits.ts';

export interface RunningGateway {
  url: string;
  port: number;
  server: Server;
  store: ResourceStore;
  source: FileSource;
  /** The demo key minted on this start, if any; shown once by main.ts, never logged. */
  demoKey: string | null;
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, log: Logger): Promise<RunningGateway> {
  await mkdir(config.dataDir, { recursive: true });
  await prepareConfigFile(config);
  const demoKey = await ensureDemoKey(config);

  const store = new ResourceStore();
  const source = new FileSource(config.configFile, store, log, config.reloadPollMs);
  await source.start();

  const closeHooks: Array<() => void | Promise<void>> = [];
  const upstreams = createUpstreamRuntime(store, config.breaker);
  closeHooks.push(() => upstreams.close());
  const limits = await createPlanLimits({ dataDir: config.dataDir, log, clock: config.clock, ...config.limits, replicas: () => 1 });
  closeHooks.push(() => limits.close());
  const deps: GatewayDeps = { config, store, log, upstreams, limits, onClose: (hook) => closeHooks.push(hook) };
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
    demoKey,
    async close() {
      await source.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const hook of closeHooks) await hook();
    },
  };
}
