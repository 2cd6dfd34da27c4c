// POST /v1/embeddings: parse, resolve the model, reserve, and hand over to its backend (service-test's
// feature-hashed vectors, backends/service-test-embeddings.ts; or the upstream, proxied as sent).
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { readJsonBody } from '../http/body.ts';
import type { Backends } from './backends/backend.ts';
import { reserveFor, resolveModel } from './model-access.ts';

export function registerEmbeddingRoutes(router: Router, deps: GatewayDeps, backends: Backends): void {
  router.post('/v1/embeddings', async (ctx) => {
    const body = await readJsonBody(ctx, deps.config.maxBodyBytes);
    const resolved = resolveModel(ctx, body.model, 'model', 'embeddings');
    await reserveFor(ctx, deps, body, 'embeddings');
    // Parameters are checked only for service-test: an upstream may know parameters we do not.
    return backends.of(resolved).embeddings(ctx, resolved, body);
  });
}
