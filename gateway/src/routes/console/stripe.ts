// POST /webhooks/stripe: the raw body (the signature covers its exact bytes) handed to the webhook
// service; answers are JSON in the API's error shape when refused.
import type Router from '@koa/router';
import getRawBody from 'raw-body';
import type { GatewayDeps } from '../../deps.ts';
import { ApiError, notFound, payloadTooLarge } from '../../http/errors.ts';
import type { ConsoleServices } from '../../console/services.ts';

/** Stripe's events are a few kilobytes; a checkout session with line items stays well under this. */
const MAX_EVENT_BYTES = 512 * 1024;

export function registerStripeWebhook(router: Router, deps: GatewayDeps, services: ConsoleServices): void {
  router.post('/webhooks/stripe', async (ctx) => {
    if (!services.stripe) throw notFound('The Stripe webhook is not configured on this gateway (TOLLGATE_STRIPE_WEBHOOK_SECRET).', null, 'unknown_url');
    let payload: Buffer;
    try {
      payload = await getRawBody(ctx.req, { limit: MAX_EVENT_BYTES });
    } catch {
      throw payloadTooLarge(MAX_EVENT_BYTES);
    }
    const answer = await services.stripe.handle(payload, ctx.get('stripe-signature') || undefined);
    if (answer.status >= 400) {
      deps.log.warn({ webhook: 'stripe', code: answer.code }, `stripe webhook refused: ${answer.message}`);
      throw new ApiError(answer.status, answer.code, answer.message, { type: answer.status === 404 ? 'not_found_error' : 'invalid_request_error' });
    }
    ctx.body = { received: true, result: answer.code, message: answer.message };
  });
}
