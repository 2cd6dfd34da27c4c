// Which model a request may use. The key's catalogue is the whole answer: a model in it is served;
// a model that exists but is outside the plan is 402 (payment enlarges the catalogue); anything
// else does not exist for anyone and is 400 model_not_found.
import type { Context } from 'koa';
import type { Model } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import type { Exchange } from '../exchange/exchange.ts';
import type { Principal } from '../exchange/principal.ts';
import type { JsonObject } from '../http/body.ts';
import { ApiError, invalidType, missingParam } from '../http/errors.ts';
import { setHeaders } from '../http/response-headers.ts';
import type { GatewayState } from '../http/state.ts';
import { reserveByParameters, reserveTokens, type ParameterAsk } from '../limits/plan-limits.ts';
import type { TokenEndpoint } from '../limits/estimate.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';

export type ResolvedModel = { kind: 'service-test'; id: string } | { kind: 'upstream'; id: string; model: Model };

/** The request's exchange, begun at the edge (http/envelope.ts). */
export function exchangeOf(ctx: Context): Exchange {
  return (ctx.state as GatewayState).exchange;
}

export function principalOf(ctx: Context): Principal {
  const principal = (ctx.state as GatewayState).exchange.principal;
  if (!principal) throw new Error('route reached without authentication');
  return principal;
}

/**
 * Resolves the model a request names, for `operation` (OpenAI's name for what is asked: `chat.completions`,
 * `embeddings`, …; recorded on the exchange for logs, metrics and spans).
 */
export function resolveModel(ctx: Context, value: unknown, param = 'model', operation?: string): ResolvedModel {
  if (operation) (ctx.state as GatewayState).exchange.operation = operation;
  if (value === undefined || value === null || value === '') throw missingParam(param);
  if (typeof value !== 'string') throw invalidType(param, 'a string');
  (ctx.state as GatewayState).exchange.modelRequested = value;
  const principal = principalOf(ctx);
  if (principal.catalogue.byId.has(value)) {
    if (value === SERVICE_TEST_MODEL) {
      (ctx.state as GatewayState).exchange.modelAnswered = value;
      return { kind: 'service-test', id: value };
    }
    return { kind: 'upstream', id: value, model: principal.snapshot.models.get(value)! };
  }
  if (principal.snapshot.models.has(value)) {
    const plan = principal.plan ? `plan '${principal.plan.metadata.name}'` : 'free tier';
    throw new ApiError(402, 'subscription_required', `The model '${value}' is not included in your account's ${plan}. Upgrade the plan to use it; '${SERVICE_TEST_MODEL}' is always available.`, { param, type: 'insufficient_quota', reason: 'model_not_in_plan' });
  }
  throw new ApiError(400, 'model_not_found', `The model '${value}' does not exist. GET /v1/models lists the models your key can use.`, { param });
}

/** With message contents switched on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), keeps the request body for the span. */
export function captureInput(ctx: Context, body: JsonObject): void {
  const content = (ctx.state as GatewayState).exchange.content;
  if (content) content.input = body;
}

/** Admits a token-priced request with its tokens reserved (plan-limits.ts) and sets the x-ratelimit-* headers. */
export async function reserveFor(ctx: Context, deps: GatewayDeps, body: JsonObject, endpoint: TokenEndpoint): Promise<void> {
  const headers = await reserveTokens(exchangeOf(ctx), deps.limits, body, endpoint);
  if (headers) setHeaders(ctx, headers);
}

/** Prices an image, audio or moderation request by its parameters and admits it when a spend budget waited for them (plan-limits.ts). */
export async function reserveForParameters(ctx: Context, deps: GatewayDeps, ask: ParameterAsk): Promise<void> {
  const headers = await reserveByParameters(exchangeOf(ctx), deps.limits, ask);
  if (headers) setHeaders(ctx, headers);
}
