// Google's Application Default Credentials, for a Vertex upstream with no `credentials`: what Google's
// own libraries find, in their order — the JSON file GOOGLE_APPLICATION_CREDENTIALS names, else
// gcloud's application_default_credentials.json, else the metadata server (GKE Workload Identity,
// Cloud Run, GCE; GCE_METADATA_HOST moves it, as in Google's libraries). The file may be a
// service-account key, an authorized_user (gcloud's login: refresh-token grant), an external_account
// (workload identity federation, external-account.ts) or an impersonated_service_account.
// The token is cached until near its expiry and fetched once however many requests wait; a 401 from
// Vertex forgets it. Sources are looked for again at each fetch, so a file that appears or a metadata
// server that starts late is found by the next request.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { ProviderAuthError } from '../auth.ts';
import { externalAccountToken } from './external-account.ts';
import { ServiceAccountMinter, serviceAccountOf } from './service-account.ts';
import { GOOGLE_SCOPE, GOOGLE_TOKEN_URI, impersonate, metadataToken, postTokenForm, type AccessToken } from './token-calls.ts';

const METADATA_HOST = 'metadata.google.internal';
const METADATA_TOKEN_PATH = '/computeMetadata/v1/instance/service-accounts/default/token';
/** The metadata server answers in milliseconds where it exists; where it does not, fail fast. */
const METADATA_TIMEOUT_MS = 5_000;
/**
 * A token this close to its expiry is replaced before use (a request may run for minutes); one that
 * came with less than twice this left is replaced past half its life, not fetched again per request.
 */
const REFRESH_MARGIN_MS = 5 * 60_000;

export interface FoundToken {
  token: AccessToken;
  /** Headers that go with it (an authorized_user's quota project). */
  headers: Record<string, string>;
}

interface Entry {
  /** The variables that chose the source: a changed environment is not served an old token. */
  source: string;
  found?: FoundToken & { refreshAt: number };
  inflight?: Promise<FoundToken & { refreshAt: number }>;
}

export interface AdcOptions {
  now?: () => number;
  env?: NodeJS.ProcessEnv;
  metadataTimeoutMs?: number;
}

export class ApplicationDefaultCredentials {
  /** One entry an Upstream (bounded by the configuration), as for keys: its messages name it. */
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #env: NodeJS.ProcessEnv;
  readonly #metadataTimeoutMs: number;
  readonly #minter: ServiceAccountMinter;

  constructor(options: AdcOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#env = options.env ?? process.env;
    this.#metadataTimeoutMs = options.metadataTimeoutMs ?? METADATA_TIMEOUT_MS;
    this.#minter = new ServiceAccountMinter(this.#now);
  }

  /** A fresh token for `who` (`Upstream 'v'`, also the cache's key); `signal` stops this caller's wait only. */
  async token(who: string, signal: AbortSignal): Promise<FoundToken> {
    const source = this.#sourceKey();
    let entry = this.#entries.get(who);
    if (!entry || entry.source !== source) {
      entry = { source };
      this.#entries.set(who, entry);
    }
    if (entry.found && entry.found.refreshAt > this.#now()) return entry.found;
    const current = entry;
    // The shared fetch runs to its end for the others waiting; it is not tied to one client's signal.
    current.inflight ??= this.#fetch(who)
      .then((found) => {
        const left = found.token.expiresAt - this.#now();
        const stamped = { ...found, refreshAt: this.#now() + left - Math.min(REFRESH_MARGIN_MS, left / 2) };
        current.found = stamped;
        return stamped;
      })
      .finally(() => {
        current.inflight = undefined;
      });
    return abortable(current.inflight, signal);
  }

  /** Vertex refused `who`'s token (401): its next request fetches a new one. */
  forget(who: string): void {
    const entry = this.#entries.get(who);
    if (entry) entry.found = undefined;
  }

  /** The token held for `who`, to scrub from any text a client or log may see. */
  secrets(who: string): string[] {
    const found = this.#entries.get(who)?.found;
    return found ? [found.token.value] : [];
  }

  #sourceKey(): string {
    const env = this.#env;
    return JSON.stringify([env.GOOGLE_APPLICATION_CREDENTIALS ?? '', env.CLOUDSDK_CONFIG ?? '', env.GCE_METADATA_HOST ?? env.GCE_METADATA_IP ?? '']);
  }

  async #fetch(who: string): Promise<FoundToken> {
    const named = this.#env.GOOGLE_APPLICATION_CREDENTIALS;
    if (named) {
      const text = await readFile(named, 'utf8').catch((error: NodeJS.ErrnoException) => {
        throw new ProviderAuthError(`${who} has no credentials, and the file GOOGLE_APPLICATION_CREDENTIALS names (${named}) cannot be read (${error.code ?? error.name}).`);
      });
      return this.#fromFile(who, text, `the file GOOGLE_APPLICATION_CREDENTIALS names (${named})`);
    }
    const gcloudFile = path.join(this.#env.CLOUDSDK_CONFIG || path.join(homedir(), '.config', 'gcloud'), 'application_default_credentials.json');
    const gcloud = await readFile(gcloudFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw new ProviderAuthError(`${who} has no credentials, and gcloud's ${gcloudFile} cannot be read (${error.code ?? error.name}).`);
    });
    if (gcloud !== null) return this.#fromFile(who, gcloud, `gcloud's ${gcloudFile}`);
    const token = await metadataToken({
      who: `${who} has no credentials; Application Default Credentials tried GOOGLE_APPLICATION_CREDENTIALS (not set), ${gcloudFile} (absent) and the metadata server`,
      url: this.#metadataURL(),
      refusedWhat: 'a token for the default service account',
      now: this.#now,
      timeoutMs: this.#metadataTimeoutMs,
    });
    return { token, headers: {} };
  }

  #metadataURL(): string {
    const host = this.#env.GCE_METADATA_HOST || this.#env.GCE_METADATA_IP || METADATA_HOST;
    const base = /^https?:\/\//.test(host) ? host : `http://${host}`;
    const url = new URL(METADATA_TOKEN_PATH, base);
    url.searchParams.set('scopes', GOOGLE_SCOPE);
    return url.toString();
  }

  async #fromFile(who: string, text: string, where: string): Promise<FoundToken> {
    let json: Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (!parsed || typeof parsed !== 'object') throw new Error('not an object');
      json = parsed as Record<string, unknown>;
    } catch {
      throw new ProviderAuthError(`${who} has no credentials, and ${where} is not JSON.`);
    }
    return this.#fromJson(`${who} (credentials from ${where})`, json);
  }

  async #fromJson(who: string, json: Record<string, unknown>): Promise<FoundToken> {
    const headers: Record<string, string> = typeof json.quota_project_id === 'string' && json.quota_project_id ? { 'x-goog-user-project': json.quota_project_id } : {};
    const context = (url: string, refusedWhat: string) => ({ who, url, refusedWhat, now: this.#now });
    switch (json.type) {
      case 'service_account': {
        const account = serviceAccountOf(who, json, 'the file');
        const keyHash = createHash('sha256').update(account.privateKey).digest('hex');
        return { token: await this.#minter.mint(who, account, keyHash), headers };
      }
      case 'authorized_user': {
        const { client_id: clientId, client_secret: clientSecret, refresh_token: refreshToken } = json;
        if (typeof clientId !== 'string' || typeof clientSecret !== 'string' || typeof refreshToken !== 'string') {
          throw new ProviderAuthError(`${who}: an authorized_user needs client_id, client_secret and refresh_token.`);
        }
        // gcloud's files name no token_uri; one that does (a test, a private endpoint) is honoured.
        const tokenUri = typeof json.token_uri === 'string' && /^https?:\/\//.test(json.token_uri) ? json.token_uri : GOOGLE_TOKEN_URI;
        const token = await postTokenForm(context(tokenUri, `the refresh token of client ${clientId}`), { grant_type: 'refresh_token', client_id: clientId, client_secret: clientSecret, refresh_token: refreshToken });
        return { token, headers };
      }
      case 'external_account':
        return { token: await externalAccountToken(who, json, this.#now), headers };
      case 'impersonated_service_account': {
        // gcloud's --impersonate-service-account: the source credentials' token buys the target's.
        const { source_credentials: source, service_account_impersonation_url: url } = json;
        if (!source || typeof source !== 'object' || typeof url !== 'string') {
          throw new ProviderAuthError(`${who}: an impersonated_service_account needs source_credentials and service_account_impersonation_url.`);
        }
        const sourceToken = await this.#fromJson(who, source as Record<string, unknown>);
        return { token: await impersonate(context(url, 'the source credentials'), sourceToken.token.value, 3600), headers };
      }
      default:
        throw new ProviderAuthError(`${who}: credentials of type ${JSON.stringify(json.type ?? null).slice(0, 60)} are not supported (service_account, authorized_user, external_account, impersonated_service_account are).`);
    }
  }
}

export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
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
