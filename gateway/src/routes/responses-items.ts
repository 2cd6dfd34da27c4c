// GET /v1/responses/{id}/input_items and POST /v1/responses/input_tokens. Registered by
// responses.ts, whose stores they read: a stored service-test response lists the input it was
// created from; an upstream's response id is forwarded to the upstream that issued it.
// input_tokens counts with service-test's tokenizer, or asks the model's upstream.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody, type JsonObject } from '../http/body.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { rejectUnknown } from '../http/params.ts';
import type { Turn } from '../service-test/conversation.ts';
import { resolveFileIds } from '../service-test/file-inputs.ts';
import { pageOfItems, type StoredItem } from '../service-test/response-items.ts';
import type { ResponseObject } from '../service-test/responses-object.ts';
import { conversationFor, parseResponsesRequest } from '../service-test/responses-request.ts';
import { countPromptTokens } from '../service-test/usage.ts';
import type { ResponseStore } from '../storage/response-store.ts';
import { forwardJson } from './forward.ts';
import { exchangeOf, resolveModel } from './model-access.ts';
import { forwardResponseById } from './responses-upstream.ts';
import { accountOf, upstreamObjectsFor } from './upstream-objects.ts';

export interface StoredResponseView {
  response: ResponseObject;
  context: Turn[];
  inputItems: JsonObject[];
}

export interface ResponseMemory {
  read(account: string, id: string): StoredResponseView | undefined;
  items: ResponseStore<StoredItem>;
}

/** The body of POST /v1/responses/input_tokens, as the official SDK declares it. */
const INPUT_TOKEN_PARAMS = new Set(['model', 'input', 'instructions', 'previous_response_id', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'truncation', 'reasoning', 'conversation', 'personality']);
/** What service-test reads of them; the rest are accepted and change no count. */
const COUNTED = ['input', 'instructions', 'previous_response_id', 'tools', 'tool_choice', 'text', 'parallel_tool_calls', 'truncation', 'reasoning', 'conversation'];

export function registerResponseItemRoutes(router: Router, deps: GatewayDeps, memory: ResponseMemory): void {
  const objects = upstreamObjectsFor(deps);

  router.get('/v1/responses/:response_id/input_items', async (ctx) => {
    const id = ctx.params.response_id;
    const stored = memory.read(accountOf(ctx), id);
    if (!stored) {
      if (await forwardResponseById(ctx, deps, id, '/input_items')) return;
      throw notFound(`Response with id '${id.length > 80 ? `${id.slice(0, 80)}…` : id}' not found. Stored responses are kept in memory for a limited time, for the account that created them.`, null, 'response_not_found');
    }
    exchangeOf(ctx).modelRequested = stored.response.model;
    ctx.body = pageOfItems(stored.inputItems, ctx.query);
  });

  router.post('/v1/responses/input_tokens', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    rejectUnknown(body, INPUT_TOKEN_PARAMS);
    // `model` is optional here, as at OpenAI; without one, service-test's tokenizer counts.
    const resolved = body.model === undefined || body.model === null ? null : resolveModel(ctx, body.model, 'model', 'responses.input_tokens');
    if (resolved?.kind === 'upstream') return forwardJson(ctx, deps, resolved, '/responses/input_tokens', body);
    ctx.body = { object: 'response.input_tokens', input_tokens: await countServiceTestTokens(ctx, body, memory, objects.localFiles) };
  });
}

async function countServiceTestTokens(ctx: Context, body: JsonObject, memory: ResponseMemory, files: Parameters<typeof resolveFileIds>[2]): Promise<number> {
  const account = accountOf(ctx);
  const subset: JsonObject = {};
  for (const name of COUNTED) if (body[name] !== undefined) subset[name] = body[name];
  const noInput = body.input === undefined || body.input === null;
  const request = parseResponsesRequest({ ...subset, input: noInput ? '' : body.input }, { files: await resolveFileIds(body, account, files), item: (id) => memory.items.get(account, id) });
  if (noInput) request.input = { turns: [], callOutputs: [], items: [] };
  const previousId = request.settings.previous_response_id;
  const history = previousId === null ? [] : memory.read(account, previousId)?.context;
  if (!history) {
    throw new ApiError(400, 'previous_response_not_found', `Previous response with id '${previousId!.slice(0, 80)}' not found.`, { param: 'previous_response_id' });
  }
  return countPromptTokens(conversationFor(request, history));
}
