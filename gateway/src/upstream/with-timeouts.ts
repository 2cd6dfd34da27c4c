// Layer: the three clocks of an upstream call, kept apart so that none cuts what another allows.
// - time to the answer's headers (firstByteMs): undici's headersTimeout;
// - longest pause between body chunks (idleMs): undici's bodyTimeout, so a stream that keeps
//   making progress runs as long as it does;
// - a total for answers that are not event streams (totalMs; longer for images and uploads): it
//   covers connecting, sending the body and reading the answer, and stops when a stream begins.
// A clock that runs out before the answer's headers fails the attempt (the next target may answer);
// one that cuts an answer's body ends the request with the abort reason `timeout` (fallback.ts).
import type { Layer } from './call.ts';
import { IMAGE_TOTAL_MS, settingsOf } from './settings.ts';

export const TOTAL_TIMEOUT = 'UND_ERR_TOTAL_TIMEOUT';
/** undici's bodyTimeout: too long a pause between two chunks of the answer. */
export const IDLE_TIMEOUT = 'UND_ERR_BODY_TIMEOUT';

/** The clock an answer's body was cut by (its error code), or null when it was not cut by one. */
export function bodyTimeoutOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return code === IDLE_TIMEOUT || code === TOTAL_TIMEOUT ? code : null;
}

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
      aborts.abortAttempt(number, Object.assign(new Error('The upstream call took longer than its total timeout.'), { code: TOTAL_TIMEOUT }));
    }, totalMs);
    timer.unref();
    const outcome = await next(call);
    if (outcome.kind !== 'answered') {
      clearTimeout(timer);
      // The total ran out before the headers: a timeout like any other (504 if nothing else answers).
      return timedOut && outcome.kind === 'failed' ? { kind: 'failed', code: 'UND_ERR_HEADERS_TIMEOUT' } : outcome;
    }
    const body = outcome.response.body;
    if (isStream(String(outcome.response.headers['content-type'] ?? ''))) clearTimeout(timer);
    else body.once('close', () => clearTimeout(timer));
    return outcome;
  };
}

/** Event streams run as long as they make progress: SSE, and Bedrock's binary AWS event stream. */
function isStream(contentType: string): boolean {
  return contentType.startsWith('text/event-stream') || contentType.startsWith('application/vnd.amazon.eventstream');
}
