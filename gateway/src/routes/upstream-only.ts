// /v1/batches, /v1/threads, /v1/assistants and /v1/vector_stores (every method and sub-path) exist
// only where an upstream provides them; service-test has no batch queue or assistant state. They are
// proxied, with each id an upstream issues routed back to it for the account it was issued to:
// - a path that names an object (`/v1/batches/batch_1/cancel`) goes to the upstream that issued it;
//   an id this account was not given is a 404, exactly like one that never existed;
// - a create goes where the ids in its body live (a batch's `input_file_id`), else to the account's
//   files upstream (docs/adr/0005); a `model` in the body is checked against the plan and rewritten;
// - a top-level listing is the files upstream's, filtered to the account's own ids.
// Accounts whose plan reaches no upstream marked `files: true` get a 400 that names the way forward.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Upstream } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody, type JsonObject } from '../http/body.ts';
import { ApiError, invalidValue, notFound } from '../http/errors.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';
import { isTranslated } from '../providers/registry.ts';
import type { RoutedKind } from '../storage/routed-ids.ts';
import { proxyToUpstream, proxyToUpstreamDirect, type ProxyRequest } from '../upstream/proxy.ts';
import { principalOf, resolveModel, exchangeOf } from './model-access.ts';
import { listBody, listOwnedAtUpstream } from './owned-listing.ts';
import { accountOf, clip, filesUpstreamOf, ownedRoute, rememberIdsFromEvent, rememberIssuedIds, upstreamObjectsFor, upstreamOfReferences, type UpstreamObjects } from './upstream-objects.ts';
import { koaSink } from '../http/koa-sink.ts';

interface UpstreamOnlyFamily {
  path: string;
  /** What the API is called in messages. */
  label: string;
  /** One object of the family, in messages. */
  noun: string;
  kind: RoutedKind;
  /** Model `capabilities` hints that claim support; a model without hints may support anything. */
  capabilities: readonly string[];
  /** Whether GET on the collection lists objects (threads have no listing). */
  listable: boolean;
  /** First path segments that are actions on the collection, not object ids (POST /v1/threads/runs). */
  collectionActions?: readonly string[];
}

const FAMILIES: readonly UpstreamOnlyFamily[] = [
  { path: '/v1/batches', label: 'batches', noun: 'batch', kind: 'batch', capabilities: ['batches', 'batch'], listable: true },
  { path: '/v1/threads', label: 'threads (Assistants)', noun: 'thread', kind: 'thread', capabilities: ['threads', 'assistants'], listable: false, collectionActions: ['runs'] },
  { path: '/v1/assistants', label: 'assistants', noun: 'assistant', kind: 'assistant', capabilities: ['assistants'], listable: true },
  { path: '/v1/vector_stores', label: 'vector stores', noun: 'vector store', kind: 'vector_store', capabilities: ['vector_stores', 'assistants'], listable: true },
];

/** Ids and sub-resource names: nothing that could walk the upstream path elsewhere (`..`, encoded slashes). */
const SEGMENT = /^[A-Za-z0-9_-]{1,200}$/;
const MAX_LIST_LIMIT = 100;

export function registerUpstreamOnlyRoutes(router: Router, deps: GatewayDeps): void {
  const objects = upstreamObjectsFor(deps);
  for (const family of FAMILIES) {
    // path-to-regexp v8 syntax: the optional wildcard group matches the bare path and every sub-path.
    router.all(`${family.path}{/*rest}`, (ctx) => routeToUpstream(ctx, deps, objects, family));
  }
}

async function routeToUpstream(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, family: UpstreamOnlyFamily): Promise<void> {
  const segments = ctx.path.slice(family.path.length).split('/').slice(1);
  if (segments.some((s) => !SEGMENT.test(s))) throw notFound(`Invalid URL (${ctx.method} ${clip(ctx.path)}).`, null, 'unknown_url');
  const home = filesUpstreamOf(principalOf(ctx));
  const [first] = segments;
  const namesObject = first !== undefined && !family.collectionActions?.includes(first);

  let upstream: Upstream | null = home;
  if (namesObject) {
    const owned = await ownedRoute(ctx, objects.routes, first, family.kind);
    if (!owned && !home) throw unsupportedHere(ctx, family);
    if (!owned) throw notFound(`No ${family.noun} found with id '${clip(first)}'.`, null, `${family.kind}_not_found`);
    upstream = owned.upstream;
  } else if (!home) {
    throw unsupportedHere(ctx, family);
  }

  if (ctx.method === 'GET' && segments.length === 0 && family.listable) return listFamily(ctx, deps, objects, upstream!, family);

  const body = await readOptionalJson(ctx, deps.config.maxBodyBytes);
  const referenced = body ? await upstreamOfReferences(ctx, objects, body) : null;
  if (referenced && namesObject && referenced.metadata.name !== upstream!.metadata.name) {
    throw new ApiError(400, 'mixed_upstreams', `This request names objects held by another upstream provider than the ${family.noun} '${clip(first)}'; objects of different providers cannot be combined.`);
  }
  const target = referenced ?? upstream!;
  const account = accountOf(ctx);
  const warn = (error: unknown) => deps.log.warn({ err: error }, 'remembering upstream ids failed');
  const request: ProxyRequest = {
    endpoint: `/${[family.path.slice('/v1/'.length), ...segments].join('/')}`,
    method: ctx.method,
    json: body,
    search: ctx.querystring ? `?${ctx.querystring}` : '',
    streamKind: 'other',
    onAnswered: (name, answer) => rememberIssuedIds(objects.routes, account, name, answer, warn),
    onEventData: (name, data) => rememberIdsFromEvent(objects.routes, account, name, data, warn),
  };
  if (typeof body?.model === 'string') await forwardWithModel(ctx, deps, target, body.model, request);
  else await proxyToUpstreamDirect(exchangeOf(ctx), koaSink(ctx), deps.upstreams, target, request);
  if (ctx.method === 'DELETE' && namesObject && segments.length === 1 && ctx.status < 300) await objects.routes.forget(account, first);
}

/** An assistant or run names a model: the plan must include it and it must be served where the objects live. */
async function forwardWithModel(ctx: Context, deps: GatewayDeps, upstream: Upstream, model: string, request: ProxyRequest): Promise<void> {
  const resolved = resolveModel(ctx, model);
  if (resolved.kind === 'service-test') {
    throw invalidValue('model', `${SERVICE_TEST_MODEL} runs inside the gateway and cannot serve objects kept by an upstream provider; name a model of your plan served by '${upstream.metadata.name}'.`);
  }
  if (!resolved.model.spec.targets.some((t) => t.upstream === upstream.metadata.name)) {
    throw invalidValue('model', `The model '${resolved.id}' is not served by '${upstream.metadata.name}', the upstream provider that keeps these objects; name a model of your plan that it serves.`);
  }
  await proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, resolved.model, { ...request, pinnedUpstream: upstream.metadata.name });
}

async function listFamily(ctx: Context, deps: GatewayDeps, objects: UpstreamObjects, upstream: Upstream, family: UpstreamOnlyFamily): Promise<void> {
  const limitText = singleQuery(ctx, 'limit');
  const limit = limitText === undefined ? 20 : /^\d+$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) throw invalidValue('limit', `Invalid value for 'limit': expected an integer from 1 to ${MAX_LIST_LIMIT}.`);
  const order = singleQuery(ctx, 'order');
  const page = await listOwnedAtUpstream(ctx, deps, objects, upstream, `/${family.path.slice('/v1/'.length)}`, family.kind, {
    limit,
    after: singleQuery(ctx, 'after') || null,
    params: order ? { order } : {},
  });
  if (page) ctx.body = listBody(page.data, page.hasMore);
}

/** POST bodies are optional here (`…/cancel` has none); GET and DELETE have none. */
async function readOptionalJson(ctx: Context, maxBytes: number): Promise<JsonObject | undefined> {
  const length = ctx.get('content-length');
  if (!ctx.get('transfer-encoding') && (length === '' || length === '0')) return undefined;
  return readJsonBody(ctx, maxBytes);
}

function singleQuery(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  if (Array.isArray(value)) throw invalidValue(name, `Give '${name}' at most once.`);
  return value;
}

function unsupportedHere(ctx: Context, family: UpstreamOnlyFamily): ApiError {
  const principal = principalOf(ctx);
  const candidates: string[] = [];
  const translatedOnly: string[] = [];
  for (const entry of principal.catalogue.entries) {
    const model = principal.snapshot.models.get(entry.id);
    if (!model || entry.id === SERVICE_TEST_MODEL) continue;
    const hints = model.spec.capabilities;
    if (hints && !hints.some((hint) => family.capabilities.includes(hint))) continue;
    const upstreams = model.spec.targets.map((t) => principal.snapshot.upstreams.get(t.upstream)).filter((u) => u !== undefined);
    if (upstreams.length > 0 && upstreams.every(isTranslated)) translatedOnly.push(entry.id);
    else candidates.push(entry.id);
  }
  const planName = principal.plan?.metadata.name;
  const opening = `The ${family.label} API (${family.path}) is not supported by ${SERVICE_TEST_MODEL}, the built-in free model: it is served only by upstream providers.`;
  let advice: string;
  if (candidates.length > 0) {
    advice = `Models of your plan '${planName}' whose upstream may support it: ${candidates.join(', ')}. None of their upstreams is set to keep this account's files, batches and threads yet (an operator marks one with files: true).`;
  } else if (translatedOnly.length > 0) {
    advice = `The models of your plan '${planName}' (${translatedOnly.join(', ')}) are served by translated providers (Anthropic, Gemini, Vertex AI, Bedrock), which have no ${family.label} API; Tollgate offers chat completions and embeddings for them.`;
  } else if (planName) {
    advice = `Your plan '${planName}' includes no upstream model that supports it; use a paid plan with a model whose upstream supports ${family.label}.`;
  } else {
    advice = `Your account's plan includes no upstream model (the free tier has only ${SERVICE_TEST_MODEL}); use a paid plan with a model whose upstream supports ${family.label}.`;
  }
  return new ApiError(400, 'unsupported_for_model', `${opening} ${advice}`);
}
