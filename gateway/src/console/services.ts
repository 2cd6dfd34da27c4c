// The account area's services, built once in server.ts and handed to the routes through GatewayDeps.
import type { Logger } from 'pino';
import type { ResourceStore } from '../resources/store.ts';
import { AccountConsole } from './accounts.ts';
import { SignInAttempts } from './attempts.ts';
import { AuditLog } from './audit.ts';
import type { ConsoleConfig } from './config.ts';
import { OidcSignIn } from './oidc.ts';
import { SessionSealer } from './session.ts';
import { SignInLinks } from './signin-links.ts';
import { StripeWebhook } from './stripe-webhook.ts';
import { UsageDays } from './usage-days.ts';
import type { ConsoleWriter } from './writer.ts';

export interface ConsoleServices {
  config: ConsoleConfig;
  /** The origin every state-changing request must come from (TOLLGATE_PUBLIC_URL's); null: the request's own host. */
  publicOrigin: string | null;
  /** Cookies are Secure (and named __Host-…) when the public URL is https. */
  secureCookies: boolean;
  sealer: SessionSealer;
  oidc: OidcSignIn | null;
  links: SignInLinks;
  attempts: SignInAttempts;
  accounts: AccountConsole;
  usage: UsageDays;
  stripe: StripeWebhook | null;
  audit: AuditLog;
  clock: () => number;
}

export interface ConsoleInputs {
  config: ConsoleConfig;
  publicURL: string | null;
  dataDir: string;
  keyPrefix: string;
  store: ResourceStore;
  writer: ConsoleWriter;
  log: Logger;
  clock: () => number;
}

export async function createConsoleServices(inputs: ConsoleInputs): Promise<ConsoleServices> {
  const { config, publicURL, store, writer, log, clock } = inputs;
  const base = publicURL ? new URL(publicURL) : null;
  if (config.oidc && !base) throw new Error('TOLLGATE_OIDC_ISSUER is set but TOLLGATE_PUBLIC_URL is not: the console needs it for the redirect URI (<public URL>/console/auth/callback)');
  const audit = new AuditLog(log);
  const usage = new UsageDays(clock);
  const root = base ? base.href.replace(/\/+$/, '') : '';
  return {
    config,
    publicOrigin: base ? base.origin : null,
    secureCookies: base?.protocol === 'https:',
    sealer: await SessionSealer.create(config.sessionSecret, inputs.dataDir),
    oidc: config.oidc ? new OidcSignIn(config.oidc, `${root}/console/auth/callback`) : null,
    links: new SignInLinks(clock),
    attempts: new SignInAttempts(config.signInPerMinute, clock),
    accounts: new AccountConsole({ store, writer, audit, usage, keyPrefix: inputs.keyPrefix, clock }),
    usage,
    stripe: config.stripeWebhookSecret ? new StripeWebhook(config.stripeWebhookSecret, store, writer, audit) : null,
    audit,
    clock,
  };
}
