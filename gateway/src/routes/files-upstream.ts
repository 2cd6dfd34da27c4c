// /v1/files for accounts whose plan reaches an upstream marked `files: true` (docs/adr/0005): uploads
// are spooled and relayed there as the client sent them, the ids it issues are remembered for the
// account, and retrieval, download and deletion of those ids go back to it. Downloads stream
// through untouched. Files the gateway itself stored earlier (before the plan changed) stay
// reachable by id and are listed after the upstream's.
import type { Context } from 'koa';
import type { Upstream } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import type { ListQuery } from '../storage/files.ts';
import { proxyToUpstreamDirect } from '../upstream/proxy.ts';
import { relayFormDirect, withSpooledForm } from './multipart-relay.ts';
import { listBody, listOwnedAtUpstream } from './owned-listing.ts';
import { accountOf, ownedRoute, rememberIssuedIds, type UpstreamObjects } from './upstream-objects.ts';
import { koaSink } from '../http/koa-sink.ts';
import { exchangeOf } from './model-access.ts';

export function uploadToUpstream(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, upstream: Upstream): Promise<void> {
  const account = accountOf(ctx);
  return withSpooledForm(ctx, deps, (form) =>
    relayFormDirect(ctx, deps, upstream, '/files', form, {
      // A large upload to a slow provider takes a while; the image timeout is the generous one.
      longRunning: true,
      onAnswered: (name, answer) => rememberIssuedIds(objects.routes, account, name, answer, (error) => deps.log.warn({ err: error }, 'remembering an uploaded file id failed')),
    }),
  );
}

/** The upstream's files of this account, then (once those run out) the gateway's own. */
export async function listWithUpstream(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, upstream: Upstream, query: ListQuery): Promise<void> {
  const params: Record<string, string> = { order: query.order };
  if (query.purpose) params.purpose = query.purpose;
  const page = await listOwnedAtUpstream(ctx, deps, objects, upstream, '/files', 'file', { limit: query.limit, after: query.after, params });
  if (!page) return;
  const data = page.data;
  let hasMore = page.hasMore;
  if (!hasMore && data.length < query.limit) {
    const local = await objects.localFiles.list(accountOf(ctx), { ...query, after: null, limit: query.limit - data.length });
    if (local.ok) {
      data.push(...local.data.map((record) => ({ ...record })));
      hasMore = local.hasMore;
    }
  }
  ctx.body = listBody(data, hasMore);
}

/**
 * GET, GET …/content or DELETE of a file an upstream issued to this account; false when the id is
 * not one (the caller answers 404, as for any unknown id).
 */
export async function forwardFileById(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, id: string, content: boolean): Promise<boolean> {
  const owned = await ownedRoute(ctx, objects.routes, id, 'file');
  if (!owned) return false;
  await proxyToUpstreamDirect(exchangeOf(ctx), koaSink(ctx), deps.upstreams, owned.upstream, {
    endpoint: `/files/${encodeURIComponent(id)}${content ? '/content' : ''}`,
    method: ctx.method,
    raw: content,
  });
  if (ctx.method === 'DELETE' && ctx.status < 300) await objects.routes.forget(accountOf(ctx), id);
  return true;
}
