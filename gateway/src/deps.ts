// The services a gateway is made of, built once in server.ts and passed down to the edge and the
// route families. Nothing below builds a long-lived service of its own: no hidden singletons.
import type { Logger } from 'pino';
import type { ConsoleServices } from './console/services.ts';
import type { BodyBudget } from './http/body-policy.ts';
import type { JsonParserPool } from './http/json-parser-pool.ts';
import type { Drain } from './http/drain.ts';
import type { GatewayConfig } from './config.ts';
import type { Exchanges } from './exchange/exchanges.ts';
import type { PlanLimits } from './limits/plan-limits.ts';
import type { ReplicaCount } from './resources/replicas.ts';
import type { ResourceStore } from './resources/store.ts';
import type { ImageKeeper } from './service-test/images-store.ts';
import type { ImagePainter } from './service-test/image-painter.ts';
import type { FileKeeper } from './storage/files.ts';
import type { MultipartSpool } from './storage/multipart-spool.ts';
import type { RoutedIdStore } from './storage/routed-ids.ts';
import type { SharedStores } from './storage/shared-store.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import type { UpstreamRuntime } from './upstream/runtime.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  store: ResourceStore;
  log: Logger;
  /** Every request's exchange: begun and ended at the edge; observers hook in here. */
  exchanges: Exchanges;
  /** Pools, breakers, credentials and id routes for proxying to upstream providers. */
  upstreams: UpstreamRuntime;
  /** Requests, tokens, concurrency and monthly budgets per account and key. */
  limits: PlanLimits;
  /** Live gateway replicas (ready endpoints of the Service in Kubernetes; 1 in file mode), for per-replica limits. */
  replicas: ReplicaCount;
  /** Multipart bodies parked on disk while a request runs (`${dataDir}/spool`). */
  spool: MultipartSpool;
  /** service-test's generated images, served at /images/<id>.png for an hour. */
  images: ImageKeeper;
  /** Draws service-test's pictures in worker threads, off the event loop. */
  painter: ImagePainter;
  /** Ids an upstream issued to an account (files, batches, threads…), persisted. */
  routedIds: RoutedIdStore;
  /** The gateway's own file store (free accounts, and accounts without a files upstream). */
  localFiles: FileKeeper;
  /** Shared mode (TOLLGATE_REDIS_URL): the Redis-backed stores; null when each process keeps its own state. */
  shared: SharedStores | null;
  /** Bytes of request bodies held in memory at once, shared by every request. */
  bodyBudget: BodyBudget;
  /** Bytes of multipart bodies on disk at once (spool and staged uploads), shared by every request. */
  formBudget: BodyBudget;
  /** Worker threads that parse large JSON bodies off the event loop; null when configured off. */
  jsonParser: JsonParserPool | null;
  /** Whether the gateway is shutting down (readiness fails then, answers close their connection). */
  drain: Drain;
  /** Registers work to run when the server closes (timers, open files). */
  onClose(hook: () => void | Promise<void>): void;
  /** Metrics, spans and the usage ledger; the edge begins each request's telemetry. */
  telemetry: Telemetry;
  /** The account area (/console, /webhooks/stripe); null when TOLLGATE_CONSOLE=off. */
  console: ConsoleServices | null;
}
