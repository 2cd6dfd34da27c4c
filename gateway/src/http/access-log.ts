// One JSON line per request, written when the response is done (or the client went away). It names
// the key by its resource name, never by its value.
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { GatewayState } from './state.ts';

export function accessLog(log: Logger): Middleware<GatewayState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let written = false;
    const write = (aborted: boolean) => {
      if (written) return;
      written = true;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? ctx.path;
      log.info({
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: typeof route === 'string' ? route : ctx.path,
        model: ctx.state.model ?? null,
        status: ctx.status,
        durationMs: Number((Number(process.hrtime.bigint() - started) / 1e6).toFixed(3)),
        account: ctx.state.principal?.account.metadata.name ?? null,
        apiKey: ctx.state.principal?.key.metadata.name ?? null,
        ...(ctx.state.upstream ? { upstream: ctx.state.upstream.target ?? null, attempts: ctx.state.upstream.attempts } : {}),
        ...(ctx.state.usage ? { inputTokens: ctx.state.usage.inputTokens, outputTokens: ctx.state.usage.outputTokens } : {}),
        ...(ctx.state.streamError ? { streamError: ctx.state.streamError } : {}),
        ...(aborted ? { aborted: true } : {}),
      });
    };
    ctx.res.once('finish', () => write(false));
    ctx.res.once('close', () => write(!ctx.res.writableFinished));
    await next();
  };
}
