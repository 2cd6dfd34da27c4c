// POST /v1/completions, the legacy text completions: parse, resolve, reserve, hand over to the
// model's backend. Upstream models are proxied like chat (JSON, or SSE ending in [DONE], with usage,
// the model renamed, plan limits); service-test answers as an instruct model would
// (backends/service-test-completions.ts).
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import type { Backends } from './backends/backend.ts';
import { captureInput, reserveFor, resolveModel } from './model-access.ts';

export function registerCompletionRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/completions', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'completions');
    captureInput(ctx, body);
    await reserveFor(ctx, deps, body, 'completions');
    return backends.of(resolved).completions(ctx, resolved, body);
  });
}
