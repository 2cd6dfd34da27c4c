// One JSON line per request, written when its exchange ends (the response is done, or the client went
// away). It names the key by its resource name, never by its value.
import type { Logger } from 'pino';
import type { EndHook, Exchange } from '../exchange/exchange.ts';
import { formatMoney } from '../limits/money.ts';

/**
 * The logger for access lines. Their fields are the fixed set below, built here, none of which can
 * hold a header: the redaction paths of the main logger (a wildcard, 1.5% of a proxied request's CPU)
 * have nothing to find in them, so this child skips them. Every other log line keeps them.
 */
export function accessLogger(log: Logger): Logger {
  return log.child({}, { redact: [] });
}

/** The end hook that writes a request's access line; registered once for every exchange (server.ts). */
export function accessLogHook(log: Logger): EndHook {
  const access = accessLogger(log);
  return (exchange: Exchange) => {
    // Optional fields are added by assignment, not spread: one object per line, not four.
    const line: Record<string, unknown> = {
      requestId: exchange.id,
      method: exchange.method,
      route: exchange.route ?? exchange.path,
      model: exchange.modelRequested,
      status: exchange.status,
      durationMs: Math.round((performance.now() - exchange.startedAt) * 1000) / 1000,
      account: exchange.principal?.account.metadata.name ?? null,
      apiKey: exchange.principal?.key.metadata.name ?? null,
    };
    const ids = exchange.trace;
    if (ids) {
      line.trace_id = ids.traceId;
      line.span_id = ids.spanId;
    }
    if (exchange.attempts.length > 0) {
      line.upstream = exchange.upstream;
      line.attempts = exchange.attempts.map(attemptLine);
    }
    if (exchange.usage) {
      line.inputTokens = exchange.usage.inputTokens;
      line.outputTokens = exchange.usage.outputTokens;
      if (exchange.usage.cachedInputTokens) line.cachedInputTokens = exchange.usage.cachedInputTokens;
      if (exchange.usage.reasoningTokens) line.reasoningTokens = exchange.usage.reasoningTokens;
      if (exchange.usage.audioSeconds !== undefined) line.audioSeconds = exchange.usage.audioSeconds;
    }
    // A priced request's settled cost, a decimal string in the gateway's currency.
    if (exchange.cost !== null) line.cost = formatMoney(exchange.cost);
    if (exchange.clientRequestId) line.clientRequestId = exchange.clientRequestId;
    if (exchange.imageFetch) line.imageFetch = exchange.imageFetch;
    if (exchange.streamError) line.streamError = exchange.streamError;
    if (!exchange.completed) line.aborted = true;
    // Why it was stopped: client_gone, shutdown, or timeout (a body or an upstream clock ran out).
    if (exchange.abortReason) line.abortReason = exchange.abortReason;
    access.info(line);
  };
}

function attemptLine(attempt: Exchange['attempts'][number]): Record<string, unknown> {
  const line: Record<string, unknown> = { upstream: attempt.upstream, ms: Math.round(attempt.headersMs ?? attempt.durationMs ?? 0) };
  if (attempt.status !== null) line.status = attempt.status;
  if (attempt.error !== null) line.error = attempt.error;
  return line;
}
