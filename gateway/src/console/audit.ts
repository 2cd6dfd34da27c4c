// The audit trail: one log line for every change made through the console or the payment webhook —
// who (the signed-in subject and e-mail, or the payment provider), what, which object. Never a key,
// a token or a cookie: the caller passes names only.
import type { Logger } from 'pino';
import type { Session } from './session.ts';

export type AuditAction = 'apikey.create' | 'apikey.revoke' | 'account.create' | 'account.plan' | 'signin' | 'signout';

export interface AuditEntry {
  action: AuditAction;
  /** `kind/name` of the object changed (`ApiKey/acme-x7k2p`). */
  object: string;
  account: string | null;
  detail?: Record<string, string | number | boolean | null>;
}

export type Actor = { kind: 'user'; session: Session } | { kind: 'webhook'; provider: string; eventId: string };

export class AuditLog {
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log.child({ audit: true });
  }

  record(actor: Actor, entry: AuditEntry): void {
    const who =
      actor.kind === 'user'
        ? { subject: actor.session.subject, email: actor.session.email, via: actor.session.grants ? 'one-time link' : 'oidc' }
        : { provider: actor.provider, eventId: actor.eventId };
    this.#log.info({ who, action: entry.action, object: entry.object, account: entry.account, ...(entry.detail ? { detail: entry.detail } : {}) }, `console: ${entry.action} ${entry.object}`);
  }
}
