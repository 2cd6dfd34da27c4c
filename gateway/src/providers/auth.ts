// How a translated provider's credential is put on a request: one layer of its own
// (upstream/with-provider-auth.ts), never code inside a transform. Anthropic and the Gemini API take
// an API key in a header; Vertex AI a short-lived OAuth token minted from a service-account key;
// Bedrock a SigV4 signature over the exact bytes sent. Credentials are read when first needed, so a
// bad one never stops the gateway from starting; it fails the attempt with a clear 502 instead.
import type { CredentialRef, Upstream } from '@tollgate/crds';
import type { ProviderRequest } from './provider.ts';

/** Reads an `env` or `secretRef` credential reference; undefined when it is not set. */
export type ReadCredential = (ref: CredentialRef) => string | undefined;

/**
 * The gateway's credential could not be obtained or was refused (a missing variable, a service-account
 * key that does not parse, a token endpoint that said no): the client gets 502 `upstream_auth_failed`
 * with this message, which must name what is wrong and never contain a secret.
 */
export class ProviderAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderAuthError';
  }
}

export interface AuthTarget {
  upstream: Upstream;
  /** The full URL the request goes to (origin of the base URL + the request's path). */
  url: URL;
}

/** A 401 or 403 answer, for `ProviderAuth.refused` to judge. */
export interface RefusedAnswer {
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface ProviderAuth {
  /**
   * The headers that authenticate `request` (added to its own). Bedrock signs method, URL, the
   * non-secret headers and the body's exact bytes. Throws ProviderAuthError; `signal` aborts a token
   * fetch when the client leaves.
   */
  authorize(request: ProviderRequest, target: AuthTarget, read: ReadCredential, signal: AbortSignal): Promise<Record<string, string>>;
  /**
   * The provider refused a credential this provider minted or fetched (401: Vertex's expired token; 403
   * naming an expired session: Bedrock's): forget it. True when a second try with a fresh credential may
   * succeed (the layer retries once). `answer` is the refusal's head and text (at most 64 KiB), which
   * tell an expired credential from a missing permission that no fresh one mends.
   */
  refused?(upstream: Upstream, status: number, answer: RefusedAnswer): boolean;
  /** Secret values that must be scrubbed from any text a client or log may see (the API key, a token). */
  secrets?(upstream: Upstream, read: ReadCredential): string[];
}
