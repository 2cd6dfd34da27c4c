// POST /v1/chat/completions: parse, resolve the model, reserve its tokens, and hand over to its
// backend (service-test in-process, backends/service-test-chat.ts; or the upstream proxy).
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import type { Backends } from './backends/backend.ts';
import { captureInput, reserveFor, resolveModel } from './model-access.ts';

export function registerChatRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/chat/completions', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'chat.completions');
    captureInput(ctx, body);
    await reserveFor(ctx, deps, body, 'chat');
    return backends.of(resolved).chatCompletions(ctx, resolved, body);
  });
}
