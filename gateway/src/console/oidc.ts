// Sign-in with OpenID Connect: the authorization code flow with PKCE (S256), state and nonce, by
// `openid-client` (certified, by the author of the IdP used in the tests). The IdP's metadata is
// discovered on first use and kept; a failed discovery is retried on the next sign-in.
import * as oidc from 'openid-client';
import type { OidcSettings } from './config.ts';
import { newToken, type PendingLogin } from './session.ts';

export interface SignedInUser {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** How long a user may take at the IdP between leaving and coming back. */
const LOGIN_TTL_MS = 10 * 60_000;

export class OidcSignIn {
  readonly #settings: OidcSettings;
  readonly #redirectUri: string;
  #configuration: Promise<oidc.Configuration> | null = null;

  constructor(settings: OidcSettings, redirectUri: string) {
    this.#settings = settings;
    this.#redirectUri = redirectUri;
  }

  get redirectUri(): string {
    return this.#redirectUri;
  }

  #discover(): Promise<oidc.Configuration> {
    if (!this.#configuration) {
      const { issuer, clientId, clientSecret } = this.#settings;
      const url = new URL(issuer);
      // Plain http only for an IdP on this machine (development, tests); anything else must be https.
      const local = url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
      this.#configuration = oidc
        .discovery(url, clientId, clientSecret ?? undefined, clientSecret ? oidc.ClientSecretBasic(clientSecret) : oidc.None(), local ? { execute: [oidc.allowInsecureRequests] } : undefined)
        .catch((error: unknown) => {
          this.#configuration = null;
          throw error;
        });
    }
    return this.#configuration;
  }

  /** Where to send the browser, and what to remember (sealed in a short-lived cookie) until it returns. */
  async begin(now: number): Promise<{ url: string; pending: PendingLogin }> {
    const configuration = await this.#discover();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const pending: PendingLogin = { state: newToken(), nonce: newToken(), codeVerifier, expiresAt: now + LOGIN_TTL_MS };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.#redirectUri,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url: url.href, pending };
  }

  /** Exchanges the code in the callback URL for tokens and returns who signed in; throws on any mismatch. */
  async complete(callbackUrl: URL, pending: PendingLogin): Promise<SignedInUser> {
    const configuration = await this.#discover();
    const tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (!idClaims) throw new Error('the IdP returned no ID token');
    // Many IdPs (oidc-provider, Keycloak by configuration) put e-mail and name only in UserInfo.
    const claims: Record<string, unknown> =
      typeof idClaims.email === 'string' || !configuration.serverMetadata().userinfo_endpoint
        ? idClaims
        : { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, idClaims.sub)), ...idClaims };
    return {
      subject: idClaims.sub,
      email: typeof claims.email === 'string' ? claims.email.toLowerCase() : null,
      emailVerified: claims.email_verified === true,
      name: typeof claims.name === 'string' ? claims.name : null,
    };
  }
}
