// POST /v1/responses for a model whose provider has no Responses API: the gateway is the Responses
// API. The request becomes a chat request (dialects/responses/request.ts) answered by the model's
// targets like any chat completion — same limits, fallback, metrics — and the answer becomes a
// Response, streamed as Responses events while the chat stream comes (dialects/responses/stream.ts).
// The Response is kept as service-test's are (in the data directory, or Redis in shared mode), with the chat
// history it continues from, so previous_response_id, GET/DELETE /v1/responses/{id}, input_items and
// item_reference work on every replica; `store: false` keeps nothing.
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readWholeJson, type JsonObject } from '../http/body.ts';
import { OPENAI_MAX_STRING_LENGTH } from '../http/string-length.ts';
import { ApiError } from '../http/errors.ts';
import { NO_CONTEXT } from '../service-test/responses-input.ts';
import { parseResponsesRequest } from '../service-test/responses-request.ts';
import { chatRequestOf, inputMessages } from '../dialects/responses/request.ts';
import { rejectBuiltInTools, restoreCustomTools, storedOutputItems, withCustomToolsAsFunctions } from '../dialects/responses/custom-tools.ts';
import { assistantMessageOf, newResponseBase, responseOfCompletion } from '../dialects/responses/response.ts';
import { ChatToResponsesStream } from '../dialects/responses/stream.ts';
import type { ResponseObject } from '../service-test/responses-object.ts';
import { keepItems, referencedItems, type ResponseMemory } from './backends/service-test-responses.ts';
import { translateChatStream } from './dialect-stream.ts';
import { forwardJson } from './forward.ts';
import { principalOf, type ResolvedModel } from './model-access.ts';

type Json = Record<string, any>;
type UpstreamModel = Extract<ResolvedModel, { kind: 'upstream' }>;

export async function translatedResponses(ctx: Context, deps: GatewayDeps, memory: ResponseMemory, resolved: UpstreamModel, received: JsonObject): Promise<void> {
  const original = await readWholeJson(received, { maxStringLength: OPENAI_MAX_STRING_LENGTH });
  rejectBuiltInTools(original);
  const custom = withCustomToolsAsFunctions(original);
  const body = custom.body;
  const account = principalOf(ctx).account.metadata.name;
  const items = await referencedItems(memory, account, body.input);
  const request = parseResponsesRequest(body, { files: NO_CONTEXT.files, item: (id) => items.get(id) });
  const previousId = request.settings.previous_response_id;
  let history: Json[] = [];
  if (previousId !== null) {
    const stored = await memory.responses.get(account, previousId);
    if (!stored) throw previousNotFound(previousId, 'it is not stored (it may have expired, belong to another account, or have been created with store: false)');
    if (!stored.chat) throw previousNotFound(previousId, `it was answered by service-test, not by a model of '${resolved.id}'`);
    history = stored.chat;
  }
  const input = inputMessages(request.input.items.map((item) => item.wire));
  const chat = chatRequestOf(body, request, history, input);
  // From here on the client's own terms: what the Response echoes and input_items lists.
  restoreCustomTools(request, original, custom);
  const wireInput = request.input.items.map((item) => item.wire);
  const base = newResponseBase(resolved.id, request.settings, body.reasoning as Json | undefined, new Set(custom.byName.keys()));
  const persist = async (response: Json): Promise<void> => {
    if (!request.settings.store) return;
    await keepItems(memory, account, [...request.input.items, ...storedOutputItems(response.output)]);
    const entry = { response: response as ResponseObject, context: [], inputItems: wireInput, chat: [...history, ...input, assistantMessageOf(response)] };
    if (!(await memory.responses.put(account, base.id, entry, JSON.stringify(entry).length))) {
      deps.log.warn({ requestId: ctx.state.requestId, responseId: base.id }, 'response too large to store; previous_response_id will not find it');
    }
  };

  if (request.stream) {
    const translator = new ChatToResponsesStream(base);
    translateChatStream(ctx, {
      feed: (text) => translator.feed(text),
      // Stored before response.completed goes out: a client continuing at once finds it.
      end: () => {
        const final = translator.final;
        return final ? persist(final).then(() => translator.end()) : translator.end();
      },
    });
    return forwardJson(ctx, deps, resolved, '/chat/completions', chat, { streamKind: 'chat', operation: 'chat' });
  }
  await forwardJson(ctx, deps, resolved, '/chat/completions', chat, { streamKind: 'chat', operation: 'chat' });
  if (ctx.respond === false || ctx.status >= 300) return;
  const completion = Buffer.isBuffer(ctx.body) ? JSON.parse(ctx.body.toString('utf8')) : (ctx.body as Json);
  const response = responseOfCompletion(base, completion);
  await persist(response);
  ctx.body = response;
  ctx.type = 'application/json';
}

function previousNotFound(id: string, why: string): ApiError {
  return new ApiError(400, 'previous_response_not_found', `Cannot continue from previous response '${id.slice(0, 80)}': ${why}. Keep your own history and pass it in 'input' instead.`, { param: 'previous_response_id' });
}
