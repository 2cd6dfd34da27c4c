// POST /v1/moderations. `model` is optional, as at OpenAI: without one (or with service-test),
// service-test answers deterministically; a plan model is forwarded to its upstream. A priced model's
// moderation is reserved and settled like any other operation (its input at the input price, at least
// `perRequest`), so spend budgets hold for it too.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';
import type { Backends } from './backends/backend.ts';
import { reserveForParameters, resolveModel } from './model-access.ts';

export function registerModerationRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/moderations', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model ?? SERVICE_TEST_MODEL, 'model', 'moderations');
    await reserveForParameters(ctx, deps, { by: 'moderation', input: body.input });
    return backends.of(resolved).moderations(ctx, resolved, body);
  });
}
