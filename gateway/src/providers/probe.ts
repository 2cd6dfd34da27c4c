// The operator's probe of a translated provider (operator/src/probes.ts): the provider's cheapest
// authenticated call (translation.probe) with its credential, so that an Upstream's Reachable and
// CredentialsValid conditions mean the same for Anthropic, Gemini, Vertex AI and Bedrock as for an
// OpenAI-compatible upstream's GET /models. Null for upstreams that are probed the OpenAI way.
import type { Upstream } from '@tollgate/crds';
import type { ReadCredential } from './auth.ts';
import { baseURLOf } from './endpoints.ts';
import { builtInProviders, moduleOf } from './registry.ts';

export { ProviderAuthError } from './auth.ts';

export interface ProviderProbe {
  method: 'GET' | 'POST';
  url: string;
  /** What the conditions name: `GET https://api.anthropic.com/v1/models?limit=1`. */
  description: string;
  body: string | undefined;
  /** Adds the credential (may mint a token or sign); throws ProviderAuthError. */
  headers(signal: AbortSignal): Promise<Record<string, string>>;
  /**
   * True when a failed answer says the credential was refused, in the provider's own words: not
   * always a 401/403 (the Gemini API answers a bad key with 400 API_KEY_INVALID).
   */
  credentialRefused(status: number, headers: Record<string, string | string[] | undefined>, text: string): boolean;
  /** The model ids in a 2xx answer (parsed JSON), in the provider's own list shape; undefined when the probe is no model list. */
  modelIds(json: unknown): string[] | undefined;
}

const registry = builtInProviders();

export function providerProbe(upstream: Upstream, read: ReadCredential): ProviderProbe | null {
  const module = moduleOf(registry, upstream);
  if (!module) return null;
  const request = module.translation.probe(upstream);
  const base = baseURLOf(upstream).replace(/\/$/, '');
  const url = `${base}${request.path}`;
  return {
    method: request.method,
    url,
    description: `${request.method} ${url}`,
    body: request.method === 'POST' ? request.body : undefined,
    async headers(signal) {
      const credential = await module.auth.authorize(request, { upstream, url: new URL(url) }, read, signal);
      return { accept: 'application/json', ...(upstream.spec.headers ?? {}), ...request.headers, ...credential };
    },
    credentialRefused: (status, headers, text) => status === 401 || status === 403 || module.translation.error(status, headers, text).credentialRefused === true,
    modelIds: (json) => module.translation.probeModels?.(json),
  };
}
