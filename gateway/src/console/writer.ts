// The console's writes, the same few operations whatever the source: in standalone mode they edit the
// manifest file (as `tollgate keys create` does) and take effect through the hot reload; in Kubernetes
// they go through the API server with the console's own ServiceAccount. Plans and Models are never
// written: they stay the platform team's (GitOps).
import type { Account, ApiKey } from '@tollgate/crds';

/** Annotations on an Account where the payment webhook keeps what it must remember (ADR 0035). */
export const STRIPE_CUSTOMER_ANNOTATION = 'tollgate.dev/stripe-customer';
export const STRIPE_EVENTS_ANNOTATION = 'tollgate.dev/stripe-events';
/** Who created a key or an account through the console. */
export const CREATED_BY_ANNOTATION = 'tollgate.dev/created-by';
/** Event ids remembered per account: Stripe retries an event for days, but an account sees few. */
export const REMEMBERED_EVENTS = 20;

export interface PaymentChange {
  /** The new plan; null returns the account to the free tier. */
  plan: string | null;
  /** The payment provider's customer, remembered for later events (a cancelled subscription). */
  customer?: string;
}

export type PaymentOutcome = 'applied' | 'duplicate' | 'missing';

/** An account's month so far for the whole cluster, as the operator rolls it up into Account.status.usage. */
export interface MonthTotals {
  month: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** This month's spend in micros of `currency` (Account.status.usage.spend, the SPEND column); null when not reported. */
  spend: number | null;
  currency: string | null;
}

export interface ConsoleWriter {
  readonly mode: 'file' | 'kubernetes';
  createKey(key: ApiKey): Promise<void>;
  /** Revoked at once for every replica: spec.revoked in the file, the object deleted in Kubernetes. */
  revokeKey(name: string): Promise<void>;
  createAccount(account: Account): Promise<void>;
  /**
   * Applies a payment event to an account exactly once: the event id is checked and recorded in the
   * same write as the change (a precondition on the object's version in Kubernetes, one writer at a
   * time in the file), so a repeated event — at this replica or another — changes nothing.
   */
  applyPayment(account: string, eventId: string, change: PaymentChange): Promise<PaymentOutcome>;
  /**
   * The one read the console makes beside the snapshot: the cluster-wide usage the operator writes
   * into Account.status.usage, read fresh (the snapshot does not follow status-only changes). null
   * in the file, where this process sees every request itself.
   */
  clusterUsage(account: string): Promise<MonthTotals | null>;
}

/** The annotations after a payment event: the id added to the remembered ones (newest last, bounded). */
export function paymentAnnotations(current: Record<string, string> | undefined, eventId: string, change: PaymentChange): Record<string, string> | 'duplicate' {
  const seen = (current?.[STRIPE_EVENTS_ANNOTATION] ?? '').split(',').filter(Boolean);
  if (seen.includes(eventId)) return 'duplicate';
  const next: Record<string, string> = { [STRIPE_EVENTS_ANNOTATION]: [...seen, eventId].slice(-REMEMBERED_EVENTS).join(',') };
  if (change.customer) next[STRIPE_CUSTOMER_ANNOTATION] = change.customer;
  return next;
}

export class ConflictError extends Error {}
