// Liveness and readiness for Kubernetes probes; no key needed, no secrets shown.
import type Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';

export function registerHealthRoutes(router: Router, deps: GatewayDeps): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', (ctx) => {
    // Shutting down: not ready at once, so the endpoint is taken out of the Service before the listener closes.
    const ready = deps.store.generation > 0 && !deps.drain.draining;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: deps.drain.draining ? 'draining' : ready ? 'ready' : 'loading', snapshotGeneration: deps.store.generation };
  });
}
