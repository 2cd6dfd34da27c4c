// One JSON line per request, written when the response is done (or the client went away). It names
// the key by its resource name, never by its value.
import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { ResourceStore } from '../resources/store.ts';
import type { RequestRecord } from '../telemetry/request-record.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import type { GatewayState } from './state.ts';

/**
 * The logger for access lines. Their fields are the fixed set below, built here, none of which can
 * hold a header: the redaction paths of the main logger (a wildcard, 1.5% of a proxied request's CPU)
 * have nothing to find in them, so this child skips them. Every other log line keeps them.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [] });
}

/**
 * Arranges for the request's end: its metrics and spans (telemetry), then its log line, which carries
 * the trace's ids. Call before the request is handled, after telemetry.begin().
 */
export function logWhenDone(ctx: Context & { state: GatewayState }, log: Logger, telemetry: Telemetry, store: ResourceStore): void {
  // 'close' comes after 'finish' on a complete answer and alone on a disconnect: one listener does.
  ctx.res.once('close', () => {
    const aborted = !ctx.res.writableFinished;
    const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
    const route = typeof matched === 'string' ? matched : null;
    const state = ctx.state;
    const request = state.telemetry;
    const endedAt = performance.now();
    const principal = state.principal;
    const record: RequestRecord = {
      requestId: state.requestId,
      traceId: null,
      method: ctx.method,
      route,
      status: ctx.status,
      errorCode: state.error?.code ?? state.streamError,
      errorReason: state.error?.reason,
      model: state.model,
      startedAt: request.startedAt,
      endedAt,
      firstByteAt: request.firstByteAt,
      usage: state.usage,
      account: principal?.account.metadata.name,
      plan: principal?.plan?.metadata.name,
      attempts: state.upstream?.attempts ?? [],
      answeredBy: state.upstream?.target,
    };
    const ids = telemetry.finish(request, record, store);
    // Optional fields are added by assignment, not spread: one object per line, not four.
    const line: Record<string, unknown> = {
      requestId: state.requestId,
      method: ctx.method,
      route: route ?? ctx.path,
      model: state.model ?? null,
      status: ctx.status,
      durationMs: Math.round((endedAt - request.startedAt) * 1000) / 1000,
      account: state.principal?.account.metadata.name ?? null,
      apiKey: state.principal?.key.metadata.name ?? null,
    };
    if (ids) {
      line.trace_id = ids.traceId;
      line.span_id = ids.spanId;
    }
    if (state.upstream) {
      line.upstream = state.upstream.target ?? null;
      line.attempts = state.upstream.attempts.map(({ upstream, status, error, ms }) => ({ upstream, status, error, ms }));
    }
    if (state.usage) {
      line.inputTokens = state.usage.inputTokens;
      line.outputTokens = state.usage.outputTokens;
    }
    if (state.streamError) line.streamError = state.streamError;
    if (aborted) line.aborted = true;
    log.info(line);
  });
}
