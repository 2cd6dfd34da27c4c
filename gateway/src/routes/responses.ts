// POST /v1/responses, GET /v1/responses/:id and DELETE /v1/responses/:id for service-test.
// Stored responses live in memory (storage/response-store.ts), scoped to the account, so that
// previous_response_id works across a client's keys but never across accounts.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { ApiError, invalidValue, notFound } from '../http/errors.ts';
import { SseStream } from '../http/sse.ts';
import type { Turn } from '../service-test/conversation.ts';
import { answerResponse, approximateBytes, type ResponseObject } from '../service-test/responses-object.ts';
import { conversationFor, parseResponsesRequest } from '../service-test/responses-request.ts';
import { streamResponse } from '../service-test/responses-stream.ts';
import { ResponseStore } from '../storage/response-store.ts';
import type { RedisResponseStore } from '../storage/redis-response-store.ts';
import { exchangeOf, principalOf, reserveFor, resolveModel } from './model-access.ts';
import { forwardResponseById, forwardResponseCreate } from './responses-upstream.ts';
import { upstreamObjectsFor, upstreamOfReferences } from './upstream-objects.ts';

interface StoredResponse {
  response: ResponseObject;
  /**
   * The history a continuation starts from: the previous context, this request's input and this
   * response's output, as engine turns. Instructions are left out on purpose: OpenAI does not carry
   * them over either. Turns, not wire items, because images are already reduced to descriptions
   * and Data URLs need not be kept.
   */
  context: Turn[];
}

/** In this process's memory, or in Redis (shared mode): awaited either way. */
type StoredResponses = ResponseStore<StoredResponse> | RedisResponseStore<StoredResponse>;

export function registerResponseRoutes(router: Router, deps: GatewayDeps): void {
  // Shared mode keeps stored responses in Redis, so any replica answers for any other.
  const store: StoredResponses = deps.shared ? deps.shared.responses<StoredResponse>() : new ResponseStore<StoredResponse>();
  const objects = upstreamObjectsFor(deps);
  deps.onClose(() => store.close());

  router.post('/v1/responses', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'responses');
    await reserveFor(ctx, deps, body, 'responses');
    if (resolved.kind === 'upstream') {
      // File and vector store ids (input_file parts, file_search tools) must be this account's.
      await upstreamOfReferences(ctx, objects, body);
      return forwardResponseCreate(ctx, deps, resolved, body);
    }
    // Everything is validated and answered before the first byte, so errors are ordinary JSON answers.
    const request = parseResponsesRequest(body);
    const account = accountOf(ctx);
    const previousId = request.settings.previous_response_id;
    const history = previousId === null ? [] : ((await store.get(account, previousId)) ?? previousNotFound(previousId)).context;
    const conversation = conversationFor(request, history);
    const { response, outputTurn } = answerResponse(request, conversation, resolved.id);
    if (response.usage) exchangeOf(ctx).usage = { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens };
    if (request.settings.store) {
      const context = [...history, ...request.input.turns, outputTurn];
      if (!(await store.put(account, response.id, { response, context }, approximateBytes(response, context)))) {
        deps.log.warn({ requestId: ctx.state.requestId, responseId: response.id }, 'response too large to store; previous_response_id will not find it');
      }
    }
    if (!request.stream) {
      ctx.body = response;
      return;
    }
    const sse = new SseStream(ctx);
    streamResponse(sse, response).catch((error) => deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test response stream failed'));
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

async function lookup(ctx: Context, store: StoredResponses): Promise<StoredResponse> {
  const id = ctx.params.response_id as string;
  const stored = await store.get(accountOf(ctx), id);
  if (!stored) throw notFound(`Response with id '${clip(id)}' not found. Stored responses are kept in memory for a limited time, for the account that created them.`, null, 'response_not_found');
  exchangeOf(ctx).modelRequested = stored.response.model;
  return stored;
}

function previousNotFound(id: string): never {
  throw new ApiError(
    400,
    'previous_response_not_found',
    `Previous response with id '${clip(id)}' not found. Stored responses are kept in memory for a limited time, only for the account that created them, and never with store: false. Keep your own history and pass it in 'input' (or use Chat Completions) instead of relying on 'previous_response_id'.`,
    { param: 'previous_response_id' },
  );
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
