// The long-lived upstream machinery shared by every route: pools, breakers, credentials, and the
// ids that only one upstream knows (responses, files, batches) mapped to that upstream.
import type { Upstream } from '@tollgate/crds';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import type { ResourceStore } from '../resources/store.ts';
import { Breakers, type BreakerOptions } from './breaker.ts';
import { Credentials, type SecretLookup } from './credentials.ts';
import { UpstreamPools } from './pools.ts';
import { IdRoutes } from './id-routes.ts';

/**
 * Sees upstream attempts as they happen (telemetry's client spans): an attempt's span must exist
 * before the call goes out, so that its context can travel upstream in `traceparent`. Figures are
 * not taken here; they come from the exchange's attempt records when the request ends.
 */
export interface AttemptObserver {
  started(exchange: Exchange, record: UpstreamAttempt, upstream: Upstream): void;
  /** Adds trace-context headers to the call about to go out. */
  headers(exchange: Exchange, headers: Record<string, string>): void;
  /** The attempt has its status or failure; `relayed`: its answer is kept and relayed (it ends with the request). */
  ended(exchange: Exchange, record: UpstreamAttempt, relayed: boolean): void;
  /** A target was skipped because its circuit is open. */
  circuitOpen(exchange: Exchange, upstream: string): void;
}

export interface UpstreamRuntime {
  pools: UpstreamPools;
  breakers: Breakers;
  credentials: Credentials;
  ids: IdRoutes;
  /** Set by server.ts once telemetry is built; null when nothing observes attempts. */
  observer: AttemptObserver | null;
  close(): Promise<void>;
}

/** `secrets` resolves credentials.secretRef (the Kubernetes source's Secret index); file mode has none. */
export function createUpstreamRuntime(store: ResourceStore, breaker?: BreakerOptions, env: NodeJS.ProcessEnv = process.env, secrets?: SecretLookup): UpstreamRuntime {
  const pools = new UpstreamPools();
  const unsubscribe = store.onChange((snapshot) => pools.prune(snapshot));
  return {
    pools,
    breakers: new Breakers(breaker),
    credentials: new Credentials(env, secrets),
    ids: new IdRoutes(),
    observer: null,
    async close() {
      unsubscribe();
      await pools.close();
    },
  };
}
