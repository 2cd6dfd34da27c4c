// GET /v1/responses/{id}/input_items and POST /v1/responses/input_tokens. A stored service-test
// response lists the input it was created from; an upstream's response id is forwarded to the
// upstream that issued it. input_tokens is a model operation (its backend counts or forwards);
// `model` is optional there, as at OpenAI, and without one service-test's tokenizer counts.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { notFound } from '../http/errors.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';
import { pageOfItems } from '../service-test/response-items.ts';
import type { Backends } from './backends/backend.ts';
import type { ResponseMemory } from './backends/service-test-responses.ts';
import { exchangeOf, principalOf, resolveModel } from './model-access.ts';
import { forwardResponseById } from './responses-upstream.ts';

export function registerResponseItemRoutes(router: Router, deps: GatewayDeps, backends: Backends, memory: ResponseMemory): void {
  router.get('/v1/responses/:response_id/input_items', async (ctx) => {
    const id = ctx.params.response_id;
    const stored = await memory.responses.get(principalOf(ctx).account.metadata.name, id);
    if (!stored) {
      if (await forwardResponseById(ctx, deps, id, '/input_items')) return;
      throw notFound(`Response with id '${id.length > 80 ? `${id.slice(0, 80)}…` : id}' not found. Stored responses are kept for a limited time, for the account that created them.`, null, 'response_not_found');
    }
    exchangeOf(ctx).modelRequested = stored.response.model;
    ctx.body = pageOfItems(stored.inputItems, ctx.query);
  });

  router.post('/v1/responses/input_tokens', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model ?? SERVICE_TEST_MODEL, 'model', 'responses.input_tokens');
    return backends.of(resolved).inputTokens(ctx, resolved, body);
  });
}
