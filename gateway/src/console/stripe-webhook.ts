// POST /webhooks/stripe: a paid checkout gives the account named by client_reference_id the plan
// named by metadata.plan and remembers the customer; a deleted subscription returns that customer's
// account to the free tier. The signature and its timestamp (five minutes at most) are checked by the
// official `stripe` package; each event changes an account at most once (writer.applyPayment).
import Stripe from 'stripe';
import type { ResourceStore } from '../resources/store.ts';
import type { AuditLog } from './audit.ts';
import { STRIPE_CUSTOMER_ANNOTATION, type ConsoleWriter } from './writer.ts';

/** Stripe's own default, and what the issue asks for: an older timestamp is a replay. */
export const SIGNATURE_TOLERANCE_S = 300;

export interface WebhookAnswer {
  status: number;
  /** A clear reason for the sender (Stripe shows it in the dashboard); never a secret. */
  message: string;
  code: string;
}

const ok = (message: string, code = 'ok'): WebhookAnswer => ({ status: 200, message, code });
const refuse = (status: number, code: string, message: string): WebhookAnswer => ({ status, message, code });

export class StripeWebhook {
  readonly #stripe: Stripe;
  readonly #secret: string;
  readonly #store: ResourceStore;
  readonly #writer: ConsoleWriter;
  readonly #audit: AuditLog;

  constructor(secret: string, store: ResourceStore, writer: ConsoleWriter, audit: AuditLog) {
    // The API key is never used: only the webhook helpers are, which need none.
    this.#stripe = new Stripe('sk_unused_by_tollgate');
    this.#secret = secret;
    this.#store = store;
    this.#writer = writer;
    this.#audit = audit;
  }

  async handle(payload: Buffer, signature: string | undefined): Promise<WebhookAnswer> {
    if (!signature) return refuse(400, 'missing_signature', 'The Stripe-Signature header is missing.');
    let event: Stripe.Event;
    try {
      event = this.#stripe.webhooks.constructEvent(payload, signature, this.#secret, SIGNATURE_TOLERANCE_S);
    } catch (error) {
      const stale = /tolerance/i.test((error as Error).message);
      return stale
        ? refuse(400, 'stale_timestamp', `The signature's timestamp is more than ${SIGNATURE_TOLERANCE_S} seconds old (or in the future); the event is refused as a possible replay.`)
        : refuse(400, 'bad_signature', 'The Stripe-Signature does not match the payload for the configured webhook secret.');
    }
    if (event.type === 'checkout.session.completed') {
      // Delayed payment methods (bank debits) complete the checkout before the money arrives; their
      // checkout.session.async_payment_succeeded event carries the same session once it has.
      if (event.data.object.payment_status === 'unpaid') return ok('The checkout is complete but not paid yet; the plan changes on checkout.session.async_payment_succeeded.', 'awaiting_payment');
      return this.#paid(event.id, event.data.object);
    }
    if (event.type === 'checkout.session.async_payment_succeeded') return this.#paid(event.id, event.data.object);
    if (event.type === 'customer.subscription.deleted') return this.#cancelled(event.id, event.data.object);
    return ok(`Event type ${event.type} is not used by Tollgate; ignored.`, 'ignored');
  }

  async #paid(eventId: string, session: Stripe.Checkout.Session): Promise<WebhookAnswer> {
    const account = session.client_reference_id;
    const plan = session.metadata?.plan;
    const snapshot = this.#store.current;
    if (!account) return refuse(400, 'missing_account', 'The checkout session has no client_reference_id (the account area sets it to the account name).');
    if (!plan) return refuse(400, 'missing_plan', 'The checkout session has no metadata.plan (set it on the Payment Link to the Plan name).');
    if (!snapshot.plans.has(plan)) return refuse(404, 'unknown_plan', `No Plan named "${plan}" exists.`);
    if (!snapshot.accounts.has(account)) return refuse(404, 'unknown_account', `No Account named "${account}" exists.`);
    const customer = typeof session.customer === 'string' ? session.customer : (session.customer?.id ?? undefined);
    const outcome = await this.#writer.applyPayment(account, eventId, { plan, ...(customer ? { customer } : {}) });
    if (outcome === 'missing') return refuse(404, 'unknown_account', `No Account named "${account}" exists.`);
    if (outcome === 'duplicate') return ok(`Event ${eventId} was already applied; nothing changed.`, 'duplicate');
    this.#audit.record({ kind: 'webhook', provider: 'stripe', eventId }, { action: 'account.plan', object: `Account/${account}`, account, detail: { plan, customer: customer ?? null } });
    return ok(`Account ${account} now has plan ${plan}.`, 'applied');
  }

  async #cancelled(eventId: string, subscription: Stripe.Subscription): Promise<WebhookAnswer> {
    const customer = typeof subscription.customer === 'string' ? subscription.customer : subscription.customer?.id;
    if (!customer) return refuse(400, 'missing_customer', 'The subscription names no customer.');
    const account = [...this.#store.current.accounts.values()].find((a) => a.metadata.annotations?.[STRIPE_CUSTOMER_ANNOTATION] === customer);
    if (!account) return refuse(404, 'unknown_customer', `No Account belongs to customer ${customer}.`);
    const name = account.metadata.name;
    const outcome = await this.#writer.applyPayment(name, eventId, { plan: null });
    if (outcome === 'missing') return refuse(404, 'unknown_account', `No Account named "${name}" exists.`);
    if (outcome === 'duplicate') return ok(`Event ${eventId} was already applied; nothing changed.`, 'duplicate');
    this.#audit.record({ kind: 'webhook', provider: 'stripe', eventId }, { action: 'account.plan', object: `Account/${name}`, account: name, detail: { plan: null, customer } });
    return ok(`Account ${name} is back on the free tier.`, 'applied');
  }
}
