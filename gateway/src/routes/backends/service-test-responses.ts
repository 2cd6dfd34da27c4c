// POST /v1/responses answered by service-test. Stored responses live in memory
// (storage/response-store.ts), scoped to the account, so that previous_response_id works across a
// client's keys but never across accounts.
import type { Context } from 'koa';
import type { GatewayDeps } from '../../deps.ts';
import type { JsonObject } from '../../http/body.ts';
import { ApiError } from '../../http/errors.ts';
import { SseStream } from '../../http/sse.ts';
import type { Turn } from '../../service-test/conversation.ts';
import { answerResponse, approximateBytes, type ResponseObject } from '../../service-test/responses-object.ts';
import { conversationFor, parseResponsesRequest } from '../../service-test/responses-request.ts';
import { streamResponse } from '../../service-test/responses-stream.ts';
import type { ResponseStore } from '../../storage/response-store.ts';
import { exchangeOf, principalOf, type ResolvedModel } from '../model-access.ts';

export interface StoredResponse {
  response: ResponseObject;
  /**
   * The history a continuation starts from: the previous context, this request's input and this
   * response's output, as engine turns. Instructions are left out on purpose: OpenAI does not carry
   * them over either. Turns, not wire items, because images are already reduced to descriptions
   * and Data URLs need not be kept.
   */
  context: Turn[];
}

export async function serviceTestResponses(ctx: Context, deps: GatewayDeps, store: ResponseStore<StoredResponse>, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  const account = principalOf(ctx).account.metadata.name;
  // Everything is validated and answered before the first byte, so errors are ordinary JSON answers.
  const request = parseResponsesRequest(body);
  const previousId = request.settings.previous_response_id;
  const history = previousId === null ? [] : (store.get(account, previousId) ?? previousNotFound(previousId)).context;
  const conversation = conversationFor(request, history);
  const { response, outputTurn } = answerResponse(request, conversation, resolved.id);
  if (response.usage) exchangeOf(ctx).usage = { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens };
  if (request.settings.store) {
    const context = [...history, ...request.input.turns, outputTurn];
    if (!store.put(account, response.id, { response, context }, approximateBytes(response, context))) {
      deps.log.warn({ requestId: ctx.state.requestId, responseId: response.id }, 'response too large to store; previous_response_id will not find it');
    }
  }
  if (!request.stream) {
    ctx.body = response;
    return;
  }
  const sse = new SseStream(ctx);
  streamResponse(sse, response).catch((error) => deps.log.error({ err: error, requestId: ctx.state.requestId }, 'service-test response stream failed'));
}

function previousNotFound(id: string): never {
  throw new ApiError(
    400,
    'previous_response_not_found',
    `Previous response with id '${clip(id)}' not found. Stored responses are kept in memory for a limited time, only for the account that created them, and never with store: false. Keep your own history and pass it in 'input' (or use Chat Completions) instead of relying on 'previous_response_id'.`,
    { param: 'previous_response_id' },
  );
}

/** Ids come from the client; keep error messages short whatever was sent. */
function clip(id: string): string {
  return id.length > 80 ? `${id.slice(0, 80)}…` : id;
}
