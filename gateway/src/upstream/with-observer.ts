// Layer: tells an observer (telemetry's client spans) about each call that passed the breaker, as it
// goes out and when its answer's head (or its failure) is known. The observer's span must exist
// before the call, so that its context can travel upstream in `traceparent`. Figures are not taken
// here: they come from the exchange's attempt records when the request ends.
import type { Upstream } from '@tollgate/crds';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import type { Layer } from './call.ts';

export interface AttemptObserver {
  started(exchange: Exchange, record: UpstreamAttempt, upstream: Upstream): void;
  /** Adds trace-context headers to the call about to go out. */
  headers(exchange: Exchange, headers: Record<string, string>): void;
  /** The call has its status or failure; `relayed`: its answer is kept (it ends with the request). */
  ended(exchange: Exchange, status: number | undefined, error: string | undefined, relayed: boolean): void;
}

/** `observer()` is read per call: telemetry is built after the upstream runtime. */
export function withObserver(observer: () => AttemptObserver | null): Layer {
  return (next) => async (call) => {
    const watching = observer();
    if (!watching) return next(call);
    watching.started(call.exchange, call.record, call.attempt.upstream);
    watching.headers(call.exchange, call.headers);
    let status: number | undefined;
    let error: string | undefined = 'exception';
    try {
      const outcome = await next(call);
      if (outcome.kind === 'answered') {
        status = outcome.response.statusCode;
        error = undefined;
      } else error = outcome.kind === 'failed' ? outcome.code : outcome.kind === 'aborted' ? 'client closed' : outcome.why;
      return outcome;
    } finally {
      watching.ended(call.exchange, status, error, status !== undefined && status < 400);
    }
  };
}
