// POST /v1/responses (and /v1/responses/input_tokens) answered by service-test. Stored responses and
// their items are kept (in the data directory, or Redis in shared mode: routes/index.ts), scoped to the account, so that
// previous_response_id and item_reference work across a client's keys but never across accounts.
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
import { rejectUnknown } from '../../http/params.ts';
import { resolveFileIds } from '../../service-test/file-inputs.ts';
import { itemBytes, outputItems, type StoredItem } from '../../service-test/response-items.ts';
import type { InputContext } from '../../service-test/responses-input.ts';
import { countPromptTokens } from '../../service-test/usage.ts';
import type { ResponseKeeper } from '../../storage/redis-response-store.ts';
import { factsOfObject, noteFacts } from '../../upstream/answer-facts.ts';
import { exchangeOf, principalOf, type ResolvedModel } from '../model-access.ts';
import { upstreamObjectsFor } from '../upstream-objects.ts';

export interface StoredResponse {
  response: ResponseObject;
  /**
   * The history a continuation starts from: the previous context, this request's input and this
   * response's output, as engine turns. Instructions are left out on purpose: OpenAI does not carry
   * them over either. Turns, not wire items, because images are already reduced to descriptions
   * and Data URLs need not be kept.
   */
  context: Turn[];
  /** The request's input as items with ids, for GET /v1/responses/{id}/input_items. */
  inputItems: JsonObject[];
  /**
   * A response the gateway made from a chat completion (a provider without a Responses API,
   * routes/responses-translated.ts): the chat history a continuation replays, its output included.
   */
  chat?: JsonObject[];
}

/** service-test's stored responses, and their items by id (what an item_reference names). */
export interface ResponseMemory {
  responses: ResponseKeeper<StoredResponse>;
  items: ResponseKeeper<StoredItem>;
}

/** What `input` may name: this account's uploaded files and stored items. */
async function inputContext(ctx: Context, deps: GatewayDeps, memory: ResponseMemory, body: JsonObject): Promise<InputContext> {
  const account = principalOf(ctx).account.metadata.name;
  const files = await resolveFileIds(body, account, upstreamObjectsFor(deps).localFiles);
  const items = await referencedItems(memory, account, body.input);
  return { files, item: (id) => items.get(id) };
}

/**
 * The stored items `input` references (item_reference), fetched before the input is parsed: the
 * parser is synchronous, the store may be Redis. Unknown ids are left out (the parser says so).
 */
export async function referencedItems(memory: ResponseMemory, account: string, input: unknown): Promise<Map<string, StoredItem>> {
  const found = new Map<string, StoredItem>();
  if (!Array.isArray(input)) return found;
  const ids = new Set<string>();
  for (const item of input) if (item && typeof item === 'object' && (item as JsonObject).type === 'item_reference' && typeof (item as JsonObject).id === 'string') ids.add((item as JsonObject).id as string);
  await Promise.all([...ids].map(async (id) => {
    const item = await memory.items.get(account, id);
    if (item) found.set(id, item);
  }));
  return found;
}

/** Keeps a response's items (its input and output) for later item_references. */
export async function keepItems(memory: ResponseMemory, account: string, items: readonly StoredItem[]): Promise<void> {
  await Promise.all(items.map((item) => memory.items.put(account, item.wire.id as string, item, itemBytes(item))));
}

export async function serviceTestResponses(ctx: Context, deps: GatewayDeps, memory: ResponseMemory, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  const store = memory.responses;
  const account = principalOf(ctx).account.metadata.name;
  // Everything is validated and answered before the first byte, so errors are ordinary JSON answers.
  const request = parseResponsesRequest(body, await inputContext(ctx, deps, memory, body));
  const previousId = request.settings.previous_response_id;
  const history = previousId === null ? [] : ((await store.get(account, previousId)) ?? previousNotFound(previousId)).context;
  const conversation = conversationFor(request, history);
  const { response, outputTurn } = answerResponse(request, conversation, resolved.id);
  if (response.usage) exchangeOf(ctx).usage = { inputTokens: response.usage.input_tokens, outputTokens: response.usage.output_tokens };
  // The answer is decided before it is streamed: its status is the finish reason either way.
  noteFacts(exchangeOf(ctx), factsOfObject(response as unknown as Record<string, unknown>, 'responses'));
  const content = exchangeOf(ctx).content;
  if (content) content.output = response;
  if (request.settings.store) {
    const context = [...history, ...request.input.turns, outputTurn];
    const inputItems = request.input.items.map((item) => item.wire);
    await keepItems(memory, account, [...request.input.items, ...outputItems(response.output)]);
    if (!(await store.put(account, response.id, { response, context, inputItems }, approximateBytes(response, context) + JSON.stringify(inputItems).length))) {
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

/** The body of POST /v1/responses/input_tokens, as the official SDK declares it. */
const INPUT_TOKEN_PARAMS = new Set(['model', 'input', 'instructions', 'previous_response_id', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'truncation', 'reasoning', 'conversation', 'personality']);
/** What service-test reads of them; `personality` is accepted and changes no count. */
const COUNTED = ['input', 'instructions', 'previous_response_id', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'truncation', 'reasoning', 'conversation'];

/** POST /v1/responses/input_tokens: counted exactly as the response's usage.input_tokens would be. */
export async function serviceTestInputTokens(ctx: Context, deps: GatewayDeps, memory: ResponseMemory, body: JsonObject): Promise<void> {
  rejectUnknown(body, INPUT_TOKEN_PARAMS);
  const account = principalOf(ctx).account.metadata.name;
  const subset: JsonObject = {};
  for (const name of COUNTED) if (body[name] !== undefined) subset[name] = body[name];
  const noInput = body.input === undefined || body.input === null;
  const request = parseResponsesRequest({ ...subset, input: noInput ? '' : body.input }, await inputContext(ctx, deps, memory, body));
  if (noInput) request.input = { turns: [], callOutputs: [], items: [] };
  const previousId = request.settings.previous_response_id;
  const history = previousId === null ? [] : ((await memory.responses.get(account, previousId)) ?? previousNotFound(previousId)).context;
  ctx.body = { object: 'response.input_tokens', input_tokens: countPromptTokens(conversationFor(request, history)) };
}

function previousNotFound(id: string): never {
  throw new ApiError(
    400,
    'previous_response_not_found',
    `Previous response with id '${clip(id)}' not found. Stored responses are kept for a limited time, only for the account that created them, and never with store: false. Keep your own history and pass it in 'input' (or use Chat Completions) instead of relying on 'previous_response_id'.`,
    { param: 'previous_response_id' },
  );
}

/** Ids come from the client; keep error messages short whatever was sent. */
function clip(id: string): string {
  return id.length > 80 ? `${id.slice(0, 80)}…` : id;
}
