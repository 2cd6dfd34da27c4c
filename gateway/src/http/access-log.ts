// One JSON line per request, written when the response is done (or the client went away). It names
// the key by its resource name, never by its value.
import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { GatewayState } from './state.ts';

/**
 * The logger for access lines. Their fields are the fixed set below, built here, none of which can
 * hold a header: the redaction paths of the main logger (a wildcard, 1.5% of a proxied request's CPU)
 * have nothing to find in them, so this child skips them. Every other log line keeps them.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [] });
}

/** Arranges for the request's log line; call before the request is handled. */
export function logWhenDone(ctx: Context & { state: GatewayState }, log: Logger): void {
  const started = performance.now();
  // 'close' comes after 'finish' on a complete answer and alone on a disconnect: one listener does.
  ctx.res.once('close', () => {
    const aborted = !ctx.res.writableFinished;
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? ctx.path;
    const state = ctx.state;
    // Optional fields are added by assignment, not spread: one object per line, not four.
    const line: Record<string, unknown> = {
      requestId: state.requestId,
      method: ctx.method,
      route: typeof route === 'string' ? route : ctx.path,
      model: state.model ?? null,
      status: ctx.status,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      account: state.principal?.account.metadata.name ?? null,
      apiKey: state.principal?.key.metadata.name ?? null,
    };
    if (state.upstream) {
      line.upstream = state.upstream.target ?? null;
      line.attempts = state.upstream.attempts;
    }
    if (state.usage) {
      line.inputTokens = state.usage.inputTokens;
      line.outputTokens = state.usage.outputTokens;
    }
    if (state.clientRequestId) line.clientRequestId = state.clientRequestId;
    if (state.streamError) line.streamError = state.streamError;
    if (aborted) line.aborted = true;
    log.info(line);
  });
}
