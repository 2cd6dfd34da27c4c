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
import { ReplicaUsage } from './replica-usage.ts';
import type { UsageDays } from './usage-days.ts';
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
  /** TOLLGATE_CURRENCY: the currency of every price, spend and budget the pages show. */
  currency: string;
  store: ResourceStore;
  writer: ConsoleWriter;
  /** Every request's usage per day and model at this process (built in server.ts, fed by an end hook). */
  usage: UsageDays;
  /** Kubernetes: the ready addresses of a Service, for the per-day usage of every gateway replica. */
  readyAddresses?: (service: string) => Promise<string[]>;
  log: Logger;
  clock: () => number;
}

export async function createConsoleServices(inputs: ConsoleInputs): Promise<ConsoleServices> {
  const { config, publicURL, store, writer, log, clock } = inputs;
  const base = publicURL ? new URL(publicURL) : null;
  if (config.oidc && !base) throw new Error('TOLLGATE_OIDC_ISSUER is set but TOLLGATE_PUBLIC_URL is not: the console needs it for the redirect URI (<public URL>/console/auth/callback)');
  const audit = new AuditLog(log);
  const usage = inputs.usage;
  const gateways = config.gatewayUsage;
  const replicaUsage = gateways && inputs.readyAddresses ? new ReplicaUsage(() => inputs.readyAddresses!(gateways.service), gateways.metricsPort) : null;
  const root = base ? base.href.replace(/\/+$/, '') : '';
  return {
    config,
    publicOrigin: base ? base.origin : null,
    secureCookies: base?.protocol === 'https:',
    sealer: await SessionSealer.create(config.sessionSecret, inputs.dataDir),
    oidc: config.oidc ? new OidcSignIn(config.oidc, `${root}/console/auth/callback`) : null,
    links: new SignInLinks(clock),
    attempts: new SignInAttempts(config.signInPerMinute, clock),
    accounts: new AccountConsole({ store, writer, audit, usage, replicaUsage, keyPrefix: inputs.keyPrefix, currency: inputs.currency, clock }),
    usage,
    stripe: config.stripeWebhookSecret ? new StripeWebhook(config.stripeWebhookSecret, store, writer, audit) : null,
    audit,
    clock,
  };
}
