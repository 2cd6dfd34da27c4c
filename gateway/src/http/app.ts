// The middleware chain, composed once at start-up:
//   envelope (request id, access log, errors) → /v1 auth and plan limits → routes.
// Few layers on purpose: every Koa layer is paid on every request.
import Koa from 'koa';
import Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { authenticate } from './auth.ts';
import { isClientFault } from './client-error.ts';
import { createCors } from './cors.ts';
import { envelope } from './envelope.ts';
import { cacheStaticRouteMatches } from './route-match-cache.ts';
import { trustedProxies } from './request-id.ts';
import { setHeaders } from './response-headers.ts';
import type { GatewayState } from './state.ts';
import { registerApiRoutes, registerPublicRoutes } from '../routes/index.ts';

export function createApp(deps: GatewayDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  app.on('error', (error: Error & { code?: string }, ctx?: { state?: GatewayState }) => {
    // Clients that go away or send broken HTTP are ordinary traffic: a low line with the code only.
    if (isClientFault(error)) {
      deps.log.debug({ code: error.code, requestId: ctx?.state?.requestId }, 'client gone or malformed request');
      return;
    }
    deps.log.error({ err: error, requestId: ctx?.state?.requestId }, 'unhandled application error');
  });

  // Public routes (health, image URLs) and /v1 share one router: one matching pass per request.
  // Paths are case-sensitive, as OpenAI's are, and as the /v1 gate below is: `/V1/...` is an unknown
  // URL, never a route that skipped authentication.
  const router = new Router({ sensitive: true });
  registerPublicRoutes(router, deps);
  registerApiRoutes(router, deps);
  cacheStaticRouteMatches(router);
  const auth = authenticate(deps.store, deps.config.keyPrefix);
  const cors = createCors(deps.config.corsOrigins, deps.store);
  const admit = async (ctx: Koa.ParameterizedContext<GatewayState>, next: Koa.Next) => {
    cors.afterAuthentication(ctx);
    const headers = await deps.limits.admit(ctx.state.exchange);
    if (headers) setHeaders(ctx, headers);
    return next();
  };

  const bodyPolicy = { idleTimeoutMs: deps.config.timeouts.bodyIdleMs, budget: deps.bodyBudget, formBudget: deps.formBudget, parser: deps.jsonParser, offloadFromBytes: deps.config.jsonParsing.offloadFromBytes };
  app.use(envelope(deps.log, deps.exchanges, { telemetry: deps.telemetry, bodyPolicy, trustedProxies: trustedProxies(deps.config.trustedProxies), drain: deps.drain }));
  app.use((ctx, next) => {
    // Browsers' preflights carry no key: CORS answers them before authentication (http/cors.ts).
    if (cors.beforeAuthentication(ctx)) return;
    // Everything under /v1 needs a key, unknown paths included: 401 comes before 404.
    if (ctx.path === '/v1' || ctx.path.startsWith('/v1/')) return auth(ctx, () => admit(ctx, next));
    return next();
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
