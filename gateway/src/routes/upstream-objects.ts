// Objects an upstream keeps for an account: files, batches, threads, assistants, vector stores.
// Requests about them name no model, so two questions need answers the catalogue alone does not give:
// where does a new one go (the account's "files upstream", see docs/adr/0005), and which upstream
// holds an existing one (the id it issued, remembered per account in storage/routed-ids.ts).
// An upstream is usable only while the account's plan reaches it through some model target.
import type { Context } from 'koa';
import type { Upstream } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { isObject } from '../http/params.ts';
import { referencesIn } from '../http/body-references.ts';
import type { Principal } from '../exchange/principal.ts';
import { isTranslated } from '../providers/registry.ts';
import type { FileKeeper } from '../storage/files.ts';
import type { RoutedIdStore, RoutedId, RoutedKind } from '../storage/routed-ids.ts';
import { principalOf } from './model-access.ts';

export interface UpstreamObjects {
  routes: RoutedIdStore;
  /** The gateway's own file store (free accounts, and accounts without a files upstream). */
  localFiles: FileKeeper;
}

/** The gateway's routed ids and local files (built in server.ts), as the files, batches and threads routes use them. */
export function upstreamObjectsFor(deps: GatewayDeps): UpstreamObjects {
  return { routes: deps.routedIds, localFiles: deps.localFiles };
}

export function accountOf(ctx: Context): string {
  return principalOf(ctx).account.metadata.name;
}

/** The upstreams the account's plan reaches through the targets of its models. */
export function reachableUpstreams(principal: Principal): Map<string, Upstream> {
  const reachable = new Map<string, Upstream>();
  for (const entry of principal.catalogue.entries) {
    const model = principal.snapshot.models.get(entry.id);
    for (const target of model?.spec.targets ?? []) {
      const upstream = principal.snapshot.upstreams.get(target.upstream);
      if (upstream) reachable.set(upstream.metadata.name, upstream);
    }
  }
  return reachable;
}

/**
 * Where the account's new files, batches and threads go: its first reachable upstream marked
 * `files: true`, by name. A translated provider (Anthropic, Gemini, Vertex, Bedrock) has no such API:
 * the schema refuses `files: true` on one, and should one be loaded anyway (a CRD installed before the
 * rule) it is passed over rather than sent a files request it would be asked as a chat.
 */
export function filesUpstreamOf(principal: Principal): Upstream | null {
  const candidates = [...reachableUpstreams(principal).values()].filter((u) => u.spec.files === true && !isTranslated(u));
  candidates.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  return candidates[0] ?? null;
}

/** The upstream holding an id this account was given, while the account may still reach it. */
export async function ownedRoute(ctx: Context, routes: RoutedIdStore, id: string, kind?: RoutedKind): Promise<{ route: RoutedId; upstream: Upstream } | null> {
  const principal = principalOf(ctx);
  const route = await routes.lookup(principal.account.metadata.name, id);
  if (!route || (kind && route.kind !== kind)) return null;
  const upstream = reachableUpstreams(principal).get(route.upstream);
  return upstream ? { route, upstream } : null;
}

const KIND_OF_OBJECT: Record<string, RoutedKind> = { file: 'file', batch: 'batch', thread: 'thread', assistant: 'assistant', vector_store: 'vector_store' };

/**
 * Remembers the ids an upstream answer gives this account: the object's own id, the thread a run
 * or message belongs to, a batch's output and error files, and the same for each item of a list.
 */
export function rememberIssuedIds(routes: RoutedIdStore, account: string, upstream: string, answer: unknown, onError: (error: unknown) => void): void {
  if (!isObject(answer)) return;
  const items = answer.object === 'list' && Array.isArray(answer.data) ? answer.data : [answer];
  const remember = (id: unknown, kind: RoutedKind) => {
    if (typeof id === 'string' && id) routes.remember(account, id, { upstream, kind }).catch(onError);
  };
  for (const item of items) {
    if (!isObject(item) || typeof item.object !== 'string') continue;
    const kind = KIND_OF_OBJECT[item.object];
    if (kind) remember(item.id, kind);
    if (item.object.startsWith('thread.')) remember(item.thread_id, 'thread');
    if (item.object === 'batch') {
      remember(item.output_file_id, 'file');
      remember(item.error_file_id, 'file');
    }
  }
}

/** Stream events carry the same objects (a run creating its thread); most events need no parsing. */
export function rememberIdsFromEvent(routes: RoutedIdStore, account: string, upstream: string, data: string, onError: (error: unknown) => void): void {
  if (!data.includes('"object":"thread') && !data.includes('"object": "thread')) return;
  try {
    rememberIssuedIds(routes, account, upstream, JSON.parse(data), onError);
  } catch {}
}

/**
 * Checks that every id the body names was issued to this account, all by one upstream, and returns
 * that upstream (null when the body names none). Another account's id is as unknown as a made-up one.
 */
export async function upstreamOfReferences(ctx: Context, objects: UpstreamObjects, body: unknown): Promise<Upstream | null> {
  let upstream: Upstream | null = null;
  for (const reference of referencesIn(body)) {
    const owned = await ownedRoute(ctx, objects.routes, reference.id);
    if (!owned) {
      if (reference.kind === 'file' && (await objects.localFiles.get(accountOf(ctx), reference.id))) {
        throw new ApiError(400, 'file_not_on_upstream', `The file '${clip(reference.id)}' is kept by this gateway, not by an upstream provider, so '${reference.param}' cannot use it here. Upload it again: uploads now go to the upstream that serves this request.`, { param: reference.param });
      }
      throw notFound(`No ${reference.kind.replace('_', ' ')} found with id '${clip(reference.id)}'.`, reference.param, `${reference.kind}_not_found`);
    }
    if (upstream && owned.upstream.metadata.name !== upstream.metadata.name) {
      throw new ApiError(400, 'mixed_upstreams', `'${reference.param}' names an object held by another upstream provider than the rest of this request; objects of different providers cannot be combined.`, { param: reference.param });
    }
    upstream = owned.upstream;
  }
  return upstream;
}

/** Echo client values in messages, but never an arbitrarily long one. */
export function clip(value: string): string {
  return value.length > 100 ? `${value.slice(0, 100)}…` : value;
}
