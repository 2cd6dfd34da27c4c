// Assembles a gateway: resources, app, HTTP server. Used by main.ts and by every test (port 0).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { GatewayDeps } from './deps.ts';
import { createApp } from './http/app.ts';
import { BodyBudget } from './http/body-policy.ts';
import { JsonParserPool } from './http/json-parser-pool.ts';
import { Drain } from './http/drain.ts';
import { answerClientErrors } from './http/client-error.ts';
import { withSafeErrors } from './telemetry/logger.ts';
import { loadTokenizer } from './service-test/tokens.ts';
import { DEMO_ACCOUNT, ensureDemoKey, prepareConfigFile } from './resources/bootstrap.ts';
import { createConsoleServices, type ConsoleServices } from './console/services.ts';
import { FileConsoleWriter } from './console/file-writer.ts';
import { UsageDays } from './console/usage-days.ts';
import { FileSource } from './resources/file-source.ts';
import type { KubernetesSource } from './resources/kubernetes-source.ts';
import { SINGLE_REPLICA, type ReplicaCount } from './resources/replicas.ts';
import { ResourceStore } from './resources/store.ts';
import { createUpstreamRuntime } from './upstream/runtime.ts';
import { RemoteImages } from './upstream/remote-images/inline-images.ts';
import type { ProviderRegistry } from './providers/registry.ts';
import { createPlanLimits, type PlanLimits } from './limits/plan-limits.ts';
import type { LimitStore } from './limits/limit-store.ts';
import { Exchanges } from './exchange/exchanges.ts';
import { accessLogHook } from './http/access-log.ts';
import { ImageStore } from './service-test/images-store.ts';
import { ImagePainter } from './service-test/image-painter.ts';
import { FileStore } from './storage/files.ts';
import { MultipartSpool } from './storage/multipart-spool.ts';
import { RoutedIds } from './storage/routed-ids.ts';
import { createSharedStores, type SharedStores } from './storage/shared-store.ts';
import { monthOf } from './limits/month.ts';
import { SERVICE_TEST_MODEL } from './resources/snapshot.ts';
import { Telemetry } from './telemetry/telemetry.ts';
import type { ClusterUsage } from './telemetry/usage-ledger.ts';

/** What a caller (a test, later a shared-store mode) may put in place of the defaults. */
export interface StartOptions {
  /** The limit store; by default the in-process one, with monthly usage persisted in the data directory. */
  limitStore?: LimitStore;
  /** The cluster-wide monthly usage per account, when a shared store keeps it (Redis): `/usage` answers scope `cluster`. */
  clusterUsage?: ClusterUsage;
  /** The translated providers; by default every one built in (providers/registry.ts). */
  providers?: ProviderRegistry;
}

const IMAGE_SWEEP_INTERVAL_MS = 5 * 60 * 1000;

/** How long before the end of the grace period open requests are aborted (their error events need a moment to leave). */
const ABORT_MARGIN_MS = 1000;

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
  /** On the embedded default: a one-time sign-in link to the console for the demo account; shown once by main.ts, never logged. */
  consoleLink: string | null;
  /** The account area's services; null when TOLLGATE_CONSOLE=off. */
  console: ConsoleServices | null;
  /** Every request's exchange; observers register hooks here, shutdown aborts the open ones. */
  exchanges: Exchanges;
  /** The plan limits (their store, for tests and the shared-store mode). */
  limits: PlanLimits;
  /** Shared mode (TOLLGATE_REDIS_URL): the Redis-backed stores; null in single-process mode. */
  shared: SharedStores | null;
  /** Whether the gateway is draining (shutdown() began). */
  drain: Drain;
  /** Metrics listener (/metrics, /usage), tracing, usage ledger. */
  telemetry: Telemetry;
  /**
   * Graceful shutdown (SIGTERM): /readyz fails at once; new connections are still accepted for
   * shutdown.acceptMs (while the endpoint is being removed), then refused; requests and streams in
   * flight run on until shutdown.graceMs after the start, and those still open then are aborted with
   * the reason 'shutdown' (streams end with an in-band error event); then close(). Resolves when all
   * is closed and flushed.
   */
  shutdown(): Promise<void>;
  close(): Promise<void>;
}

export async function startGateway(config: GatewayConfig, givenLog: Logger, options: StartOptions = {}): Promise<RunningGateway> {
  const log = withSafeErrors(givenLog);
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
  // Request bodies and the images fetched into them share one budget of memory.
  const bodyBudget = new BodyBudget(config.bodyBudgetBytes);
  const remoteImages = config.remoteImages.enabled ? new RemoteImages(config.remoteImages, bodyBudget) : null;
  const upstreams = createUpstreamRuntime(store, config.breaker, process.env, 'secretLookup' in source ? source.secretLookup : undefined, config.maxSseEventBytes, options.providers, remoteImages);
  closeHooks.push(() => upstreams.close());
  const shared = config.redis ? createSharedStores(config.redis, log) : null;
  // The first connection gets a moment before the gateway listens; if Redis is not there yet the
  // gateway starts anyway (degraded, the failure policy applies) and connects when it can.
  if (shared) await shared.redis.waitReady(2000).catch((error: Error) => log.warn({ sharedStore: 'redis', reason: error.message }, 'shared store not reachable at start-up; serving with the failure policy until it is'));
  // With a shared store every replica enforces the whole limit against the same counters; without
  // one, each enforces its share of it.
  const limitReplicas = shared ? () => 1 : () => replicas.current();
  const limits = await createPlanLimits({ dataDir: config.dataDir, log, clock: config.clock, ...config.limits, replicas: limitReplicas, store: options.limitStore ?? shared?.limitStore });
  closeHooks.push(() => limits.close());
  const exchanges = new Exchanges(log);
  // This month per account, day and model, and each key's last use: the account area's chart, and
  // `GET /usage/days` on the metrics port, which the console's pods read in Kubernetes. Bounded.
  const usageDays = new UsageDays(config.clock);
  exchanges.onEnd((exchange) => {
    const principal = exchange.principal;
    if (!principal) return;
    usageDays.record({
      account: principal.account.metadata.name,
      key: principal.key.metadata.name,
      model: exchange.modelRequested,
      inputTokens: exchange.usage?.inputTokens ?? 0,
      outputTokens: exchange.usage?.outputTokens ?? 0,
      // The settled cost in integer micros (limits/money.ts), never a float.
      ...(exchange.cost !== null ? { spend: exchange.cost } : {}),
    });
  });
  const telemetry = await Telemetry.start(
    config.telemetry,
    {
      store,
      inflight: () => exchanges.openNow(),
      sourceStatus: () => ({ syncedAt: source.lastSyncAt, refused: source.status.lastError?.length ?? 0 }),
      breakers: upstreams.breakers,
      clock: config.clock,
      currency: config.limits.currency,
      // Shared mode: GET /usage answers the cluster's totals from Redis (scope cluster).
      clusterUsage: options.clusterUsage ?? (shared ? (month) => shared.usage.month(month) : undefined),
      accountDays: (account) => usageDays.accountJson(account),
      sharedStore: shared ? () => ({ degraded: shared.redis.degraded, fallbacks: shared.limitFallbacks() }) : undefined,
    },
    log,
  );
  upstreams.observer = telemetry.attempts;
  // Telemetry first: the access line carries the request's trace ids.
  exchanges.onEnd(telemetry.endHook);
  exchanges.onEnd(accessLogHook(log));
  if (shared) {
    // Usage per account for the whole cluster (GET /usage, scope cluster); never fails a request.
    exchanges.onEnd((exchange) => {
      const account = exchange.principal?.account.metadata.name;
      if (account) {
        const model = exchange.modelRequested;
        // Per model only under names the snapshot knows: the hash stays bounded whatever clients send.
        const known = model !== null && (model === SERVICE_TEST_MODEL || exchange.principal!.snapshot.models.has(model)) ? model : null;
        void shared.usage.record(account, monthOf(config.clock()), { inputTokens: exchange.usage?.inputTokens ?? 0, outputTokens: exchange.usage?.outputTokens ?? 0, spend: exchange.cost ?? 0, key: exchange.principal!.key.metadata.name, model: known });
      }
    });
  }
  const images = shared ? shared.images : localImages(config.dataDir, log, closeHooks);
  const routedIds = shared ? shared.routedIds : new RoutedIds(config.dataDir, { log });
  const localFiles = shared ? shared.files : new FileStore(path.join(config.dataDir, 'files'));
  // Let a start-up sweep and pending log writes finish before the data directory may be removed.
  closeHooks.push(async () => {
    await localFiles.whenReady().catch(() => {});
    await routedIds.flush().catch(() => {});
  });
  const painter = new ImagePainter();
  closeHooks.push(() => painter.close());
  const formBudget = new BodyBudget(config.spoolBudgetBytes);
  const jsonParser = config.jsonParsing.workers > 0 ? new JsonParserPool(config.jsonParsing.workers) : null;
  if (jsonParser) closeHooks.push(() => jsonParser.close());
  const drain = new Drain(exchanges);
  const consoleServices = config.console.enabled ? await startConsole(config, store, source, usageDays, log) : null;
  const deps: GatewayDeps = {
    config,
    store,
    log,
    exchanges,
    bodyBudget,
    formBudget,
    jsonParser,
    drain,
    upstreams,
    limits,
    replicas,
    telemetry,
    spool: new MultipartSpool(path.join(config.dataDir, 'spool')),
    images,
    painter,
    routedIds,
    localFiles,
    shared,
    onClose: (hook) => closeHooks.push(hook),
    console: consoleServices,
  };
  // Every account can use service-test (free accounts use nothing else), so its tokenizer is always needed.
  loadTokenizer();
  const app = createApp(deps);
  const { timeouts } = config;
  const server = createServer(
    {
      // Long streams and large uploads are normal here; Node's 5-minute whole-request timeout is not
      // wanted. A pause mid-body is caught by the body readers' idle timeout instead (body-policy.ts).
      requestTimeout: 0,
      // Slow headers (slowloris) are cut off; the check runs often enough for the timeout to mean what it says.
      headersTimeout: timeouts.headersMs,
      connectionsCheckingInterval: Math.min(timeouts.headersMs, 1000),
      // Longer than client pools keep idle sockets (undici 4 s, Node's agent and SDKs up to 60 s): the
      // client closes an idle connection first, instead of reusing one that this side is closing (EPIPE).
      keepAliveTimeout: timeouts.keepAliveMs,
    },
    app.callback(),
  );
  answerClientErrors(server, log);
  // `Expect: 100-continue`: a body that cannot be accepted gets its answer without being asked for first.
  server.on('checkContinue', (req, res) => {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (!(declared > config.maxBodyBytes)) res.writeContinue();
    server.emit('request', req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

  /** Resolves when no exchange is open, or after `ms`. */
  const idleWithin = (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([exchanges.idle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]).finally(() => clearTimeout(timer));
  };
  const close = async () => {
    await source.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for (const hook of closeHooks) await hook();
    // Settlements and usage of requests that ended during shutdown still reach Redis.
    await shared?.close();
    // Last: the final requests' spans are exported before the process goes.
    await telemetry.close();
  };
  const shutdown = async () => {
    const started = Date.now();
    const { graceMs, acceptMs } = config.shutdown;
    drain.start();
    log.info({ openRequests: exchanges.open, graceMs }, 'draining: readiness fails, in-flight requests run on');
    await new Promise((resolve) => setTimeout(resolve, Math.min(acceptMs, graceMs)));
    // Refuse new connections; idle keep-alive ones close now, busy ones once their answer is out.
    server.close();
    server.closeIdleConnections();
    const closeIdle = setInterval(() => server.closeIdleConnections(), 100);
    // The streams still open are ended a moment before the grace period is over, so that their error
    // events are out and the state flushed before the kubelet's SIGKILL.
    await idleWithin(graceMs - Math.min(ABORT_MARGIN_MS, graceMs / 4) - (Date.now() - started));
    const cut = exchanges.open;
    exchanges.abortAll('shutdown');
    // The error events just written need a moment to leave; whatever is still open then is cut.
    if (exchanges.open > 0) await idleWithin(1000);
    clearInterval(closeIdle);
    log.info({ abortedAtDeadline: cut, stillOpen: exchanges.open, ms: Date.now() - started }, 'drained');
    await close();
  };

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    store,
    source,
    replicas,
    demoKey,
    consoleLink: consoleServices && !kubernetes && !config.configFileExplicit && config.bootstrapDemoKey && store.current.accounts.has(DEMO_ACCOUNT)
      ? `${(config.publicURL ?? `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${port}`).replace(/\/+$/, '')}/console/auth/link?token=${consoleServices.links.issue(DEMO_ACCOUNT)}`
      : null,
    console: consoleServices,
    exchanges,
    limits,
    shared,
    drain,
    telemetry,
    shutdown,
    close,
  };
}

/** The account area: its writer (the manifest file, or the API server with the console's ServiceAccount) and services. */
async function startConsole(config: GatewayConfig, store: ResourceStore, source: FileSource | KubernetesSource, usage: UsageDays, log: Logger): Promise<ConsoleServices> {
  const inputs = { config: config.console, publicURL: config.publicURL, dataDir: config.dataDir, keyPrefix: config.keyPrefix, currency: config.limits.currency, store, usage, log, clock: config.clock };
  if (config.source === 'kubernetes') {
    const [{ KubeConsoleWriter }, { loadKubeConfig }] = await Promise.all([import('./console/kube-writer.ts'), import('@tollgate/kube')]);
    const writer = new KubeConsoleWriter(loadKubeConfig(config.kubernetes.kubeconfig), config.kubernetes.namespace);
    return createConsoleServices({ ...inputs, writer, readyAddresses: (service) => writer.readyAddresses(service) });
  }
  return createConsoleServices({ ...inputs, writer: new FileConsoleWriter(config.configFile, () => source.reload()) });
}

/** service-test's images in the data directory, swept of expired files on a timer. */
function localImages(dataDir: string, log: Logger, closeHooks: Array<() => void | Promise<void>>): ImageStore {
  const images = new ImageStore(path.join(dataDir, 'images'));
  images.sweepSync();
  closeHooks.push(images.startSweeping(IMAGE_SWEEP_INTERVAL_MS, (error) => log.warn({ err: error }, 'sweeping expired images failed')));
  return images;
}
