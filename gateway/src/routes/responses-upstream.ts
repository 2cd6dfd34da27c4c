// Responses for upstream-backed models. A response id means something only to the upstream that
// issued it, so the gateway remembers id → upstream (per account) and sends continuations
// (previous_response_id), retrievals and deletions back there, never to another target.
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import type { JsonObject } from '../http/body.ts';
import { ApiError, invalidType } from '../http/errors.ts';
import { proxyToUpstream } from '../upstream/proxy.ts';
import type { IdRoute } from '../upstream/id-routes.ts';
import { principalOf, type ResolvedModel, exchangeOf } from './model-access.ts';
import { koaSink } from '../http/koa-sink.ts';

export function forwardResponseCreate(ctx: Context, deps: GatewayDeps, resolved: Extract<ResolvedModel, { kind: 'upstream' }>, body: JsonObject): Promise<void> {
  const account = principalOf(ctx).account.metadata.name;
  const previous = body.previous_response_id;
  let pinnedUpstream: string | undefined;
  if (previous !== undefined && previous !== null) {
    if (typeof previous !== 'string') throw invalidType('previous_response_id', 'a string');
    const route = deps.upstreams.ids.lookup(account, previous);
    if (!route) throw cannotContinue(previous, 'this gateway does not know which upstream issued it (it may predate a restart, or belong to another account)');
    if (!resolved.model.spec.targets.some((t) => t.upstream === route.upstream)) {
      throw cannotContinue(previous, `it was issued by upstream '${route.upstream}', which does not serve '${resolved.id}'`);
    }
    pinnedUpstream = route.upstream;
  }
  const remember = (upstream: string, id: unknown) => {
    if (typeof id === 'string') deps.upstreams.ids.remember(account, id, { upstream, model: resolved.id });
  };
  return proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, resolved.model, {
    endpoint: '/responses',
    method: 'POST',
    json: body,
    streamKind: 'responses',
    pinnedUpstream,
    onAnswered: (upstream, answer) => remember(upstream, (answer as { id?: unknown } | null)?.id),
    onResponseId: remember,
  });
}

/** GET or DELETE of a response an upstream issued; false when the id is not an upstream's. */
export async function forwardResponseById(ctx: Context, deps: GatewayDeps, id: string): Promise<boolean> {
  const principal = principalOf(ctx);
  const route: IdRoute | undefined = deps.upstreams.ids.lookup(principal.account.metadata.name, id);
  const model = route && principal.catalogue.byId.has(route.model) ? principal.snapshot.models.get(route.model) : undefined;
  if (!route || !model) return false;
  await proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, model, { endpoint: `/responses/${encodeURIComponent(id)}`, method: ctx.method, search: ctx.querystring ? `?${ctx.querystring}` : '', pinnedUpstream: route.upstream, streamKind: 'responses' });
  if (ctx.method === 'DELETE' && ctx.status < 300) deps.upstreams.ids.forget(principal.account.metadata.name, id);
  return true;
}

function cannotContinue(id: string, why: string): ApiError {
  return new ApiError(400, 'previous_response_not_found', `Cannot continue from previous response '${id.slice(0, 80)}': ${why}. Keep your own history and pass it in 'input' (or use Chat Completions) instead.`, { param: 'previous_response_id' });
}
