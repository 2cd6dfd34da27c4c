// A Google service-account key (the JSON Google issues) exchanged for an access token with the
// JWT-bearer grant (RFC 7523) at the key's `token_uri`, the assertion signed with `jose`. Used for a
// Vertex upstream's own `credentials` and for a `service_account` file found by Application Default
// Credentials (adc.ts).
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import { ProviderAuthError } from '../auth.ts';
import { GOOGLE_SCOPE, GOOGLE_TOKEN_URI, postTokenForm, type AccessToken } from './token-calls.ts';

export interface ServiceAccount {
  clientEmail: string;
  privateKey: string;
  privateKeyId?: string;
  tokenUri: string;
}

/** `who` starts each message (`Upstream 'v'`); `what` says where the JSON came from. */
export function parseServiceAccount(who: string, text: string, what = 'the vertex credentials'): ServiceAccount {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new ProviderAuthError(`${who}: ${what} are not a service-account key (not JSON).`);
  }
  return serviceAccountOf(who, json, what);
}

export function serviceAccountOf(who: string, json: Record<string, unknown>, what: string): ServiceAccount {
  const clientEmail = json.client_email;
  const privateKey = json.private_key;
  if (typeof clientEmail !== 'string' || typeof privateKey !== 'string') {
    throw new ProviderAuthError(`${who}: ${what} are not a service-account key (client_email and private_key are required).`);
  }
  const tokenUri = typeof json.token_uri === 'string' && /^https?:\/\//.test(json.token_uri) ? json.token_uri : GOOGLE_TOKEN_URI;
  return { clientEmail, privateKey, privateKeyId: typeof json.private_key_id === 'string' ? json.private_key_id : undefined, tokenUri };
}

/** Mints tokens from service-account keys; the imported signing key of the last key used is kept. */
export class ServiceAccountMinter {
  #signingKeys = new Map<string, Promise<CryptoKey>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** `keyHash` identifies the key (a rotated key is imported anew). */
  async mint(who: string, account: ServiceAccount, keyHash: string, signal?: AbortSignal): Promise<AccessToken> {
    let key = this.#signingKeys.get(keyHash);
    if (!key) {
      key = importPKCS8(account.privateKey, 'RS256');
      // Bounded: one key at a time is enough for the common case, and importing is cheap.
      this.#signingKeys.clear();
      this.#signingKeys.set(keyHash, key);
    }
    let signingKey: CryptoKey;
    try {
      signingKey = await key;
    } catch {
      this.#signingKeys.delete(keyHash);
      throw new ProviderAuthError(`${who}: the service-account key's private_key is not a PKCS#8 PEM RSA key.`);
    }
    const issuedAt = Math.floor(this.#now() / 1000);
    const assertion = await new SignJWT({ scope: GOOGLE_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) })
      .setIssuer(account.clientEmail)
      .setSubject(account.clientEmail)
      .setAudience(account.tokenUri)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + 3600)
      .sign(signingKey);
    return postTokenForm(
      { who, url: account.tokenUri, refusedWhat: `the service account ${account.clientEmail}`, now: this.#now, signal },
      { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion },
    );
  }
}
