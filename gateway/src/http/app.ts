// The middleware chain, composed once at start-up:
//   request id → access log → error handler → 404/405/501 bodies → health → /v1 auth → plan limits → routes.
import Koa from 'koa';
import Router from '@koa/router';
import type { GatewayDeps } from '../deps.ts';
import { accessLog } from './access-log.ts';
import { authenticate } from './auth.ts';
import { errorHandler } from './error-handler.ts';
import { ApiError, notFound } from './errors.ts';
import { requestId } from './request-id.ts';
import type { GatewayState } from './state.ts';
import { registerApiRoutes, registerPublicRoutes } from '../routes/index.ts';

export function createApp(deps: GatewayDeps): Koa<GatewayState> {
  const app = new Koa<GatewayState>();
  app.on('error', (error: Error & { code?: string }) => {
    // Client disconnects mid-stream are normal; everything else deserves a log line.
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    deps.log.error({ err: error }, 'unhandled application error');
  });

  const publicRouter = new Router();
  registerPublicRoutes(publicRouter, deps);

  const apiRouter = new Router();
  registerApiRoutes(apiRouter, deps);
  const auth = authenticate(deps.store, deps.config.keyPrefix);

  app.use(requestId());
  app.use(accessLog(deps.log));
  app.use(errorHandler(deps.log));
  app.use(unmatchedToApiError());
  app.use(publicRouter.routes());
  app.use(publicRouter.allowedMethods());
  app.use(async (ctx, next) => {
    if (ctx.path === '/v1' || ctx.path.startsWith('/v1/')) return auth(ctx, () => deps.limits.middleware(ctx, next));
    return next();
  });
  app.use(apiRouter.routes());
  app.use(apiRouter.allowedMethods());
  return app;
}

/** The routers leave 404/405/501 with no body; turn those into OpenAI error bodies. */
function unmatchedToApiError(): Koa.Middleware<GatewayState> {
  return async (ctx, next) => {
    await next();
    if (ctx.body !== undefined && ctx.body !== null) return;
    if (ctx.status === 404) throw notFound(`Invalid URL (${ctx.method} ${ctx.path}).`, null, 'unknown_url');
    if (ctx.status === 405) {
      const allow = ctx.response.get('Allow');
      throw new ApiError(405, 'method_not_allowed', `Method ${ctx.method} is not allowed for ${ctx.path}; use ${allow}.`, { headers: { Allow: allow } });
    }
    if (ctx.status === 501) throw new ApiError(501, 'not_implemented', `Method ${ctx.method} is not supported.`);
  };
}
