// Credentials for Google: the Gemini API takes its key in `x-goog-api-key` (never in the URL, where
// access logs would keep it); Vertex AI takes an OAuth access token minted from a service-account key
// with the JWT-bearer grant (RFC 7523) at the key's `token_uri` (service-account.ts), or, when the
// Upstream names no credentials, from Google's Application Default Credentials (adc.ts: GKE Workload
// Identity, Cloud Run, GOOGLE_APPLICATION_CREDENTIALS). Tokens are cached and refreshed before they
// expire, one fetch at a time however many requests wait; a 401 from Vertex forgets the token so
// that the upstream layer's one retry gets a fresh one.
import { createHash } from 'node:crypto';
import type { Upstream } from '@tollgate/crds';
import { ProviderAuthError, type ProviderAuth, type ReadCredential } from '../auth.ts';
import { abortable, ApplicationDefaultCredentials } from './adc.ts';
import { parseServiceAccount, ServiceAccountMinter } from './service-account.ts';
import type { AccessToken } from './token-calls.ts';

/** A token this close to its expiry is replaced before use (a request may run for minutes). */
const REFRESH_MARGIN_MS = 5 * 60_000;

function credentialText(upstream: Upstream, read: ReadCredential): string {
  const ref = upstream.spec.credentials;
  const value = ref ? read(ref) : undefined;
  if (!value) {
    const where = !ref ? 'has no credentials' : 'env' in ref ? `reads its credentials from the variable ${ref.env}, which is not set` : `reads its credentials from Secret ${ref.secretRef.name} key ${ref.secretRef.key}, which is missing or empty`;
    throw new ProviderAuthError(`Upstream '${upstream.metadata.name}' ${where}.`);
  }
  return value.trim();
}

export const geminiKeyAuth: ProviderAuth = {
  async authorize(_request, target, read) {
    return { 'x-goog-api-key': credentialText(target.upstream, read) };
  },
  secrets(upstream, read) {
    const ref = upstream.spec.credentials;
    const value = ref ? read(ref) : undefined;
    return value ? [value.trim()] : [];
  },
};

interface CachedToken {
  /** The hash of the key it was minted from: a rotated key gets a new token. */
  keyHash: string;
  token?: AccessToken;
  inflight?: Promise<AccessToken>;
}

/** Vertex AI's auth; `now` is injectable for tests of expiry. */
export function vertexTokenAuth(now: () => number = Date.now, adc = new ApplicationDefaultCredentials({ now })): ProviderAuth {
  // One entry an Upstream (bounded by the configuration), replaced when its key changes.
  const cache = new Map<string, CachedToken>();
  const minter = new ServiceAccountMinter(now);

  return {
    async authorize(_request, target, read, signal) {
      const upstream = target.upstream;
      if (!upstream.spec.credentials) {
        const found = await adc.token(`Upstream '${upstream.metadata.name}'`, signal);
        return { ...found.headers, authorization: `Bearer ${found.token.value}` };
      }
      const text = credentialText(upstream, read);
      const keyHash = createHash('sha256').update(text).digest('hex');
      let entry = cache.get(upstream.metadata.name);
      if (!entry || entry.keyHash !== keyHash) {
        entry = { keyHash };
        cache.set(upstream.metadata.name, entry);
      }
      const fresh = entry.token && entry.token.expiresAt - REFRESH_MARGIN_MS > now();
      if (!fresh) {
        let inflight = entry.inflight;
        if (!inflight) {
          const current = entry;
          const who = `Upstream '${upstream.metadata.name}'`;
          inflight = current.inflight = minter
            .mint(who, parseServiceAccount(who, text), keyHash)
            .then((token) => {
              current.token = token;
              return token;
            })
            .finally(() => {
              current.inflight = undefined;
            });
        }
        // The shared fetch runs to its end for the others waiting; this request stops waiting when its client leaves.
        const token = await abortable(inflight, signal);
        return { authorization: `Bearer ${token.value}` };
      }
      return { authorization: `Bearer ${entry.token!.value}` };
    },
    refused(upstream, status) {
      // Only a 401 says the token is bad; a 403 is the service account's missing permission, which no new token mends.
      if (status !== 401) return false;
      if (!upstream.spec.credentials) {
        adc.forget(`Upstream '${upstream.metadata.name}'`);
        return true;
      }
      // True even when another request already forgot it: this request's retry gets a fresh token too.
      const entry = cache.get(upstream.metadata.name);
      if (!entry) return false;
      entry.token = undefined;
      return true;
    },
    secrets(upstream) {
      if (!upstream.spec.credentials) return adc.secrets(`Upstream '${upstream.metadata.name}'`);
      const token = cache.get(upstream.metadata.name)?.token?.value;
      return token ? [token] : [];
    },
  };
}
