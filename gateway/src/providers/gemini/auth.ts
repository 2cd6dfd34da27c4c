// Credentials for Google: the Gemini API takes its key in `x-goog-api-key` (never in the URL, where
// access logs would keep it); Vertex AI takes an OAuth access token minted from a service-account key
// with the JWT-bearer grant (RFC 7523) at the key's `token_uri`. Tokens are cached per key and
// refreshed before they expire, one fetch at a time however many requests wait; a 401 from Vertex
// forgets the token so that the upstream layer's one retry mints a fresh one.
import { createHash } from 'node:crypto';
import type { Upstream } from '@tollgate/crds';
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import { ProviderAuthError, type ProviderAuth, type ReadCredential } from '../auth.ts';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
/** A token this close to its expiry is replaced before use (a request may run for minutes). */
const REFRESH_MARGIN_MS = 5 * 60_000;
const TOKEN_FETCH_TIMEOUT_MS = 15_000;

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

interface ServiceAccount {
  clientEmail: string;
  privateKey: string;
  privateKeyId?: string;
  tokenUri: string;
}

function parseServiceAccount(upstream: Upstream, text: string): ServiceAccount {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the vertex credentials are not a service-account key (not JSON).`);
  }
  const clientEmail = json.client_email;
  const privateKey = json.private_key;
  if (typeof clientEmail !== 'string' || typeof privateKey !== 'string') {
    throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the vertex credentials are not a service-account key (client_email and private_key are required).`);
  }
  const tokenUri = typeof json.token_uri === 'string' && /^https?:\/\//.test(json.token_uri) ? json.token_uri : DEFAULT_TOKEN_URI;
  return { clientEmail, privateKey, privateKeyId: typeof json.private_key_id === 'string' ? json.private_key_id : undefined, tokenUri };
}

interface CachedToken {
  /** The hash of the key it was minted from: a rotated key gets a new token. */
  keyHash: string;
  token?: { value: string; expiresAt: number };
  inflight?: Promise<{ value: string; expiresAt: number }>;
}

/** Vertex AI's auth; `now` is injectable for tests of expiry. */
export function vertexTokenAuth(now: () => number = Date.now): ProviderAuth {
  // One entry an Upstream (bounded by the configuration), replaced when its key changes.
  const cache = new Map<string, CachedToken>();
  const signingKeys = new Map<string, Promise<CryptoKey>>();

  async function mint(upstream: Upstream, account: ServiceAccount, keyHash: string): Promise<{ value: string; expiresAt: number }> {
    let key = signingKeys.get(keyHash);
    if (!key) {
      key = importPKCS8(account.privateKey, 'RS256');
      signingKeys.clear();
      signingKeys.set(keyHash, key);
    }
    let signingKey: CryptoKey;
    try {
      signingKey = await key;
    } catch {
      signingKeys.delete(keyHash);
      throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the service-account key's private_key is not a PKCS#8 PEM RSA key.`);
    }
    const issuedAt = Math.floor(now() / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) })
      .setIssuer(account.clientEmail)
      .setSubject(account.clientEmail)
      .setAudience(account.tokenUri)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + 3600)
      .sign(signingKey);
    let response: Response;
    try {
      response = await fetch(account.tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        signal: AbortSignal.timeout(TOKEN_FETCH_TIMEOUT_MS),
      });
    } catch (error) {
      throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the token endpoint ${account.tokenUri} could not be reached (${(error as Error).name}).`);
    }
    const text = await response.text().catch(() => '');
    let body: { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // Described below by the status.
    }
    if (!response.ok || typeof body.access_token !== 'string') {
      const reason = [body.error, body.error_description].filter((part) => typeof part === 'string').join(': ') || `HTTP ${response.status}`;
      throw new ProviderAuthError(`Upstream '${upstream.metadata.name}': the token endpoint ${account.tokenUri} refused the service account ${account.clientEmail} (${reason.slice(0, 200)}).`);
    }
    const lifetime = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
    return { value: body.access_token, expiresAt: now() + lifetime * 1000 };
  }

  return {
    async authorize(_request, target, read, signal) {
      const upstream = target.upstream;
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
          inflight = current.inflight = mint(upstream, parseServiceAccount(upstream, text), keyHash)
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
      // True even when another request already forgot it: this request's retry gets a fresh token too.
      const entry = cache.get(upstream.metadata.name);
      if (!entry) return false;
      entry.token = undefined;
      return true;
    },
    secrets(upstream) {
      const token = cache.get(upstream.metadata.name)?.token?.value;
      return token ? [token] : [];
    },
  };
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
