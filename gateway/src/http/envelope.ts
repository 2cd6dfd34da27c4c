// The outermost middleware: what every request gets, whatever its path. Its id (request-id.ts), its
// access-log line (access-log.ts), any error turned into an OpenAI error body (error-handler.ts),
// and the routers' bare 404/405/501 given one. A single Koa layer rather than four, because each
// layer costs a closure, a bound dispatch and a promise on every request.
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { ResourceStore } from '../resources/store.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import { accessLogger, logWhenDone } from './access-log.ts';
import { answerWithError } from './error-handler.ts';
import { ApiError, notFound } from './errors.ts';
import { assignRequestId } from './request-id.ts';
import type { GatewayState } from './state.ts';

export function envelope(log: Logger, telemetry: Telemetry, store: ResourceStore): Middleware<GatewayState> {
  const accessLog = accessLogger(log);
  return async (ctx, next) => {
    assignRequestId(ctx);
    ctx.state.telemetry = telemetry.begin(ctx.res, ctx.req.headers, ctx.method, ctx.path, ctx.state.requestId);
    logWhenDone(ctx, accessLog, telemetry, store);
    try {
      await next();
      throwIfUnanswered(ctx);
    } catch (error) {
      answerWithError(ctx, error, log);
    }
  };
}

/** The routers leave 404/405/501 with no body; those become OpenAI error bodies. */
function throwIfUnanswered(ctx: Context): void {
  if (ctx.body !== undefined && ctx.body !== null) return;
  if (ctx.status === 404) throw notFound(`Invalid URL (${ctx.method} ${ctx.path}).`, null, 'unknown_url');
  if (ctx.status === 405) {
    const allow = ctx.response.get('Allow');
    throw new ApiError(405, 'method_not_allowed', `Method ${ctx.method} is not allowed for ${ctx.path}; use ${allow}.`, { headers: { Allow: allow } });
  }
  if (ctx.status === 501) throw new ApiError(501, 'not_implemented', `Method ${ctx.method} is not supported.`);
}
