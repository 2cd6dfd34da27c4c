// The long-lived upstream machinery shared by every route: pools, breakers, credentials, and the
// ids that only one upstream knows (responses, files, batches) mapped to that upstream.
import type { ResourceStore } from '../resources/store.ts';
import { Breakers, type BreakerOptions } from './breaker.ts';
import { compose, type CallUpstream } from './call.ts';
import { Credentials, type SecretLookup } from './credentials.ts';
import { dispatchOn } from './dispatch.ts';
import { UpstreamPools } from './pools.ts';
import { IdRoutes } from './id-routes.ts';
import { withBreaker } from './with-breaker.ts';
import { withCredentials } from './with-credentials.ts';
import { withObserver, type AttemptObserver } from './with-observer.ts';
import { withTimeouts } from './with-timeouts.ts';
import { withProviderAuth } from './with-provider-auth.ts';
import { builtInProviders, type ProviderRegistry } from '../providers/registry.ts';
import { withRemoteImages } from './with-remote-images.ts';
import type { RemoteImages } from './remote-images/inline-images.ts';

export interface UpstreamRuntime {
  /** One call to one target, through the layers: breaker → image URLs inlined (providers that take only bytes) → observer → credentials and model → provider translation and auth → timeouts → the pool. */
  call: CallUpstream;
  /** The translations of providers that do not speak the OpenAI API. */
  providers: ProviderRegistry;
  /** Sees each call that passed the breaker (telemetry's client spans); set by server.ts, null: none. */
  observer: AttemptObserver | null;
  pools: UpstreamPools;
  breakers: Breakers;
  credentials: Credentials;
  ids: IdRoutes;
  /** Largest single event relayed from an upstream stream. */
  maxSseEventBytes: number;
  close(): Promise<void>;
}

/**
 * `secrets` resolves credentials.secretRef (the Kubernetes source's Secret index); file mode has none.
 * `remoteImages` fetches the image URLs of requests to providers that take only bytes (null: none are).
 */
export function createUpstreamRuntime(store: ResourceStore, breaker?: BreakerOptions, env: NodeJS.ProcessEnv = process.env, secrets?: SecretLookup, maxSseEventBytes = 8 * 1024 * 1024, providers: ProviderRegistry = builtInProviders(), remoteImages: RemoteImages | null = null): UpstreamRuntime {
  const pools = new UpstreamPools();
  const unsubscribe = store.onChange((snapshot) => pools.prune(snapshot));
  const breakers = new Breakers(breaker);
  const credentials = new Credentials(env, secrets);
  const runtime: UpstreamRuntime = {
    call: compose(withBreaker(breakers), withRemoteImages(remoteImages), withObserver(() => runtime.observer), withCredentials(credentials), withProviderAuth(providers, credentials), withTimeouts())(dispatchOn((upstream) => pools.get(upstream))),
    providers,
    observer: null,
    pools,
    breakers,
    credentials,
    ids: new IdRoutes(),
    maxSseEventBytes,
    async close() {
      unsubscribe();
      await Promise.all([pools.close(), remoteImages?.close()]);
    },
  };
  return runtime;
}
