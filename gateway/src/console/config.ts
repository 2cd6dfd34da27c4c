// The account area's settings, read once from the environment with the rest of the gateway's
// configuration. The console is on by default; sign-in through an IdP needs the three OIDC variables,
// and the one-time links that `npm start` prints need none.

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Absent for a public client (PKCE alone); most IdPs give the console a confidential client. */
  clientSecret: string | null;
}

export interface ConsoleConfig {
  /** TOLLGATE_CONSOLE: 'off' removes /console and /webhooks (the chart's gateway pods, whose ServiceAccount may not write). */
  enabled: boolean;
  oidc: OidcSettings | null;
  /** TOLLGATE_CONSOLE_SIGNUP=open: a signed-in user who belongs to no account gets a new free-tier account as its owner. */
  signupOpen: boolean;
  /** TOLLGATE_STRIPE_WEBHOOK_SECRET (whsec_…): POST /webhooks/stripe answers 404 without it. */
  stripeWebhookSecret: string | null;
  /** TOLLGATE_CONSOLE_SESSION_SECRET: the key of the session cookies; without it, one kept in the data directory. */
  sessionSecret: string | null;
  /** How long a session lasts after sign-in (the cookie's and the sealed token's lifetime). */
  sessionTtlMs: number;
  /** Sign-in attempts (starts, callbacks, one-time links) per client address and minute. */
  signInPerMinute: number;
  /**
   * Kubernetes: the gateway's Service and metrics port. The console's pods serve no API traffic, so
   * the per-day chart sums every ready gateway endpoint's `GET /usage/days`; null: this process's own.
   */
  gatewayUsage: { service: string; metricsPort: number } | null;
}

export function consoleConfigFrom(env: NodeJS.ProcessEnv): ConsoleConfig {
  const issuer = env.TOLLGATE_OIDC_ISSUER?.trim();
  const clientId = env.TOLLGATE_OIDC_CLIENT_ID?.trim();
  return {
    enabled: env.TOLLGATE_CONSOLE !== 'off',
    oidc: issuer && clientId ? { issuer, clientId, clientSecret: env.TOLLGATE_OIDC_CLIENT_SECRET || null } : null,
    signupOpen: env.TOLLGATE_CONSOLE_SIGNUP === 'open',
    stripeWebhookSecret: env.TOLLGATE_STRIPE_WEBHOOK_SECRET || null,
    sessionSecret: env.TOLLGATE_CONSOLE_SESSION_SECRET || null,
    sessionTtlMs: (Number(env.TOLLGATE_CONSOLE_SESSION_HOURS) || 8) * 3600_000,
    signInPerMinute: Number(env.TOLLGATE_CONSOLE_SIGNIN_PER_MINUTE) || 20,
    gatewayUsage: env.TOLLGATE_CONSOLE_GATEWAY_SERVICE ? { service: env.TOLLGATE_CONSOLE_GATEWAY_SERVICE, metricsPort: Number(env.TOLLGATE_CONSOLE_GATEWAY_METRICS_PORT) || 9464 } : null,
  };
}
