// The long-lived upstream machinery shared by every route: pools, breakers, credentials, and the
// ids that only one upstream knows (responses, files, batches) mapped to that upstream.
import type { ResourceStore } from '../resources/store.ts';
import { Breakers, type BreakerOptions } from './breaker.ts';
import { Credentials, type SecretLookup } from './credentials.ts';
import { UpstreamPools } from './pools.ts';
import { IdRoutes } from './id-routes.ts';

export interface UpstreamRuntime {
  pools: UpstreamPools;
  breakers: Breakers;
  credentials: Credentials;
  ids: IdRoutes;
  /** Largest single event relayed from an upstream stream. */
  maxSseEventBytes: number;
  close(): Promise<void>;
}

/** `secrets` resolves credentials.secretRef (the Kubernetes source's Secret index); file mode has none. */
export function createUpstreamRuntime(store: ResourceStore, breaker?: BreakerOptions, env: NodeJS.ProcessEnv = process.env, secrets?: SecretLookup, maxSseEventBytes = 8 * 1024 * 1024): UpstreamRuntime {
  const pools = new UpstreamPools();
  const unsubscribe = store.onChange((snapshot) => pools.prune(snapshot));
  return {
    pools,
    breakers: new Breakers(breaker),
    credentials: new Credentials(env, secrets),
    ids: new IdRoutes(),
    maxSseEventBytes,
    async close() {
      unsubscribe();
      await pools.close();
    },
  };
}
