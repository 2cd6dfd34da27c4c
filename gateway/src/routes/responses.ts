// POST /v1/responses (parse, resolve, reserve, hand over to the model's backend), and GET and DELETE
// /v1/responses/:id: service-test's stored responses (backends/service-test-responses.ts), or the
// upstream that issued the id.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { invalidValue, notFound } from '../http/errors.ts';
import { SseStream } from '../http/sse.ts';
import { streamResponse } from '../service-test/responses-stream.ts';
import type { ResponseKeeper } from '../storage/redis-response-store.ts';
import type { Backends } from './backends/backend.ts';
import type { StoredResponse } from './backends/service-test-responses.ts';
import { captureInput, exchangeOf, principalOf, reserveFor, resolveModel } from './model-access.ts';
import { forwardResponseById } from './responses-upstream.ts';

export function registerResponseRoutes(router: Router, deps: GatewayDeps, backends: Backends, store: ResponseKeeper<StoredResponse>): void {
  router.post('/v1/responses', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'responses');
    captureInput(ctx, body);
    await reserveFor(ctx, deps, body, 'responses');
    return backends.of(resolved).responses(ctx, resolved, body);
  });

  router.get('/v1/responses/:response_id', async (ctx) => {
    if (!(await store.get(accountOf(ctx), ctx.params.response_id)) && (await forwardResponseById(ctx, deps, ctx.params.response_id))) return;
    const stored = await lookup(ctx, store);
    const { stream, startingAfter } = parseRetrieveQuery(ctx);
    if (!stream) {
      ctx.body = stored.response;
      return;
    }
    // A replay of the events the response was (or would have been) streamed with.
    const sse = new SseStream(ctx);
    streamResponse(sse, stored.response, startingAfter).catch((error) => deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test response replay failed'));
  });

  router.delete('/v1/responses/:response_id', async (ctx) => {
    const id = ctx.params.response_id;
    if (!(await store.get(accountOf(ctx), id)) && (await forwardResponseById(ctx, deps, id))) return;
    await lookup(ctx, store);
    await store.delete(accountOf(ctx), id);
    ctx.body = { id, object: 'response', deleted: true };
  });
}

function accountOf(ctx: Context): string {
  return principalOf(ctx).account.metadata.name;
}

async function lookup(ctx: Context, store: ResponseKeeper<StoredResponse>): Promise<StoredResponse> {
  const id = ctx.params.response_id as string;
  const stored = await store.get(accountOf(ctx), id);
  if (!stored) throw notFound(`Response with id '${clip(id)}' not found. Stored responses are kept for a limited time, for the account that created them.`, null, 'response_not_found');
  exchangeOf(ctx).modelRequested = stored.response.model;
  return stored;
}


function parseRetrieveQuery(ctx: Context): { stream: boolean; startingAfter: number } {
  const stream = ctx.query.stream;
  if (stream !== undefined && stream !== 'true' && stream !== 'false') throw invalidValue('stream', "Invalid 'stream': expected true or false.");
  const after = ctx.query.starting_after;
  if (after === undefined) return { stream: stream === 'true', startingAfter: -1 };
  if (typeof after !== 'string' || !/^\d+$/.test(after)) throw invalidValue('starting_after', "Invalid 'starting_after': expected a non-negative integer sequence number.");
  if (stream !== 'true') throw invalidValue('starting_after', "'starting_after' is only allowed when 'stream' is true.");
  return { stream: true, startingAfter: Number(after) };
}

/** Ids come from the client; keep error messages short whatever was sent. */
function clip(id: string): string {
  return id.length > 80 ? `${id.slice(0, 80)}…` : id;
}
