// Listings of objects an upstream holds (files, batches, assistants, vector stores). The gateway uses
// one credential per upstream, so the upstream's own listing shows every account's objects: the
// gateway pages through it and keeps only the ids it routed for this account. Pages keep the
// upstream's order and cursors (an id of the last item returned), so the SDKs' auto-pagination works.
import type { Context } from 'koa';
import type { Upstream } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import type { JsonObject } from '../http/body.ts';
import { isObject } from '../http/params.ts';
import type { RoutedKind } from '../storage/routed-ids.ts';
import { fetchUpstreamJson } from '../upstream/proxy.ts';
import { accountOf, rememberIssuedIds, type UpstreamObjects } from './upstream-objects.ts';
import { koaSink } from '../http/koa-sink.ts';
import { exchangeOf } from './model-access.ts';

export interface OwnedPageQuery {
  limit: number;
  after: string | null;
  /** Other query parameters the upstream understands (order, purpose), passed through. */
  params: Record<string, string>;
}

export interface OwnedPage {
  data: JsonObject[];
  hasMore: boolean;
}

/** The upstream is asked for this many items per page (the largest every OpenAI listing accepts). */
const UPSTREAM_PAGE = 100;
/** A bound on the work one listing call may cause; a sparse account may get a short page with has_more. */
const MAX_UPSTREAM_PAGES = 20;

/** One page of this account's objects of `kind` at `upstream`; null when the client went away. */
export async function listOwnedAtUpstream(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, upstream: Upstream, endpoint: string, kind: RoutedKind, query: OwnedPageQuery): Promise<OwnedPage | null> {
  const account = accountOf(ctx);
  const name = upstream.metadata.name;
  const owned: JsonObject[] = [];
  let after = query.after;
  let upstreamHasMore = true;
  for (let page = 0; page < MAX_UPSTREAM_PAGES && upstreamHasMore && owned.length <= query.limit; page++) {
    const search = new URLSearchParams({ ...query.params, limit: String(UPSTREAM_PAGE) });
    if (after) search.set('after', after);
    const answer = await fetchUpstreamJson(exchangeOf(ctx), koaSink(ctx), deps.upstreams, upstream, { endpoint, method: 'GET', search: `?${search}` });
    if (!answer) return null;
    const items = Array.isArray(answer.data) ? answer.data.filter(isObject) : [];
    for (const item of items) {
      if (typeof item.id !== 'string') continue;
      const route = await objects.routes.lookup(account, item.id);
      if (route?.upstream !== name || route.kind !== kind) continue;
      owned.push(item);
      // A finished batch names its output files: they are this account's too.
      rememberIssuedIds(objects.routes, account, name, item, (error) => deps.log.warn({ err: error }, 'remembering upstream ids failed'));
    }
    const last = items.at(-1)?.id;
    upstreamHasMore = answer.has_more === true && typeof last === 'string';
    if (typeof last === 'string') after = last;
  }
  return { data: owned.slice(0, query.limit), hasMore: owned.length > query.limit || upstreamHasMore };
}

/** The list object OpenAI answers with. */
export function listBody(data: JsonObject[], hasMore: boolean) {
  return { object: 'list', data, has_more: hasMore, first_id: (data[0]?.id as string | undefined) ?? null, last_id: (data.at(-1)?.id as string | undefined) ?? null };
}
