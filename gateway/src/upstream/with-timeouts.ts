// Layer: the three clocks of an upstream call, kept apart so that none cuts what another allows.
// - time to the answer's headers (firstByteMs): undici's headersTimeout;
// - longest pause between body chunks (idleMs): undici's bodyTimeout, so a stream that keeps
//   making progress runs as long as it does;
// - a total for answers that are not event streams (totalMs; longer for images and uploads): it
//   covers connecting, sending the body and reading the answer, and stops when a stream begins.
import type { Layer } from './call.ts';
import { IMAGE_TOTAL_MS, settingsOf } from './settings.ts';

export const TOTAL_TIMEOUT = 'UND_ERR_TOTAL_TIMEOUT';

export function withTimeouts(): Layer {
  return (next) => async (call) => {
    const settings = settingsOf(call.attempt.upstream);
    call.headersTimeoutMs = settings.firstByteMs;
    call.idleTimeoutMs = settings.idleMs;
    const aborts = call.aborts;
    const number = ++aborts.attempt;
    let timedOut = false;
    const totalMs = call.request.longRunning ? Math.max(settings.totalMs, IMAGE_TOTAL_MS) : settings.totalMs;
    const timer = setTimeout(() => {
      timedOut = true;
      aborts.abortAttempt(number, new Error(TOTAL_TIMEOUT));
    }, totalMs);
    timer.unref();
    const outcome = await next(call);
    if (outcome.kind !== 'answered') {
      clearTimeout(timer);
      // The total ran out before the headers: a timeout like any other (504 if nothing else answers).
      return timedOut && outcome.kind === 'failed' ? { kind: 'failed', code: 'UND_ERR_HEADERS_TIMEOUT' } : outcome;
    }
    const body = outcome.response.body;
    if (String(outcome.response.headers['content-type'] ?? '').startsWith('text/event-stream')) clearTimeout(timer);
    else body.once('close', () => clearTimeout(timer));
    return outcome;
  };
}
