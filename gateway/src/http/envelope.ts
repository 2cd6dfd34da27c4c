// The outermost middleware: what every request gets, whatever its path. Its id (request-id.ts), its
// exchange (exchange/exchange.ts), begun here and ended here, once, when the response closes (its
// end hooks write the access line, settle limits, remove spooled files), any error turned into an
// OpenAI error body (error-handler.ts), and the routers' bare 404/405/501 given one. A single Koa
// layer rather than four, because each layer costs a closure, a bound dispatch and a promise on
// every request.
import type { BlockList } from 'node:net';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Exchanges } from '../exchange/exchanges.ts';
import { answerWithError } from './error-handler.ts';
import { ApiError, notFound } from './errors.ts';
import { assignRequestId } from './request-id.ts';
import type { BodyPolicy } from './body-policy.ts';
import type { Drain } from './drain.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import type { GatewayState } from './state.ts';

export interface EnvelopeOptions {
  /** Begins each request's telemetry beside its exchange (its server span continues an incoming traceparent). */
  telemetry: Telemetry;
  bodyPolicy: BodyPolicy;
  /** Peers whose X-Service-Request-Id is kept (null: none). */
  trustedProxies: BlockList | null;
  drain: Drain;
}

export function envelope(log: Logger, exchanges: Exchanges, options: EnvelopeOptions): Middleware<GatewayState> {
  return async (ctx, next) => {
    const clientRequestId = assignRequestId(ctx, options.trustedProxies);
    const exchange = exchanges.begin(ctx.state.requestId, ctx.method, ctx.path);
    if (clientRequestId !== null) exchange.clientRequestId = clientRequestId;
    ctx.state.exchange = exchange;
    options.telemetry.begin(exchange, ctx.req.headers, ctx.res);
    ctx.state.bodyPolicy = options.bodyPolicy;
    ctx.state.drain = options.drain;
    const res = ctx.res;
    exchange.response = res;
    options.drain.admit(res);
    // 'close' comes after 'finish' on a complete answer and alone on a disconnect: the one place a
    // request ends, whichever way.
    res.once('close', () => {
      const completed = res.writableFinished;
      if (!completed) exchange.abort('client_gone');
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      if (typeof route === 'string') exchange.route = route;
      void exchange.end(ctx.status, res.headersSent, completed);
    });
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
  // A method no route knows (TRACE, PROPFIND): the client's mistake, as OpenAI answers it.
  if (ctx.status === 501) throw new ApiError(405, 'method_not_allowed', `Method ${ctx.method} is not supported.`, { headers: { Allow: ctx.response.get('Allow') } });
}
