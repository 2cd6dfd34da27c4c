// What route families are given at start-up. Each family builds its own stores from these and
// registers clean-up with onClose, so server.ts never has to know their internals.
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { PlanLimits } from './limits/plan-limits.ts';
import type { ReplicaCount } from './resources/replicas.ts';
import type { ResourceStore } from './resources/store.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import type { UpstreamRuntime } from './upstream/runtime.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  store: ResourceStore;
  log: Logger;
  /** Pools, breakers, credentials and id routes for proxying to upstream providers. */
  upstreams: UpstreamRuntime;
  /** Requests, tokens, concurrency and monthly budgets per account and key. */
  limits: PlanLimits;
  /** Live gateway replicas (ready endpoints of the Service in Kubernetes; 1 in file mode), for per-replica limits. */
  replicas: ReplicaCount;
  /** Metrics, spans and the usage ledger; the request path reports to it at its start and end. */
  telemetry: Telemetry;
  /** Registers work to run when the server closes (timers, open files). */
  onClose(hook: () => void | Promise<void>): void;
}
