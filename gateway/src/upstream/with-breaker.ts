// Layer: the circuit breaker of the target's upstream. An open circuit skips the attempt; a half-open
// one lets this call be its probe. Every way out of the call gives a verdict or releases the probe
// slot (try/finally), so no throw can leave an upstream "probing" and refused until a restart; a 2xx
// the fallback still vets (a translated stream before its first content) hands the verdict over to it.
import type { Breakers } from './breaker.ts';
import type { Layer } from './call.ts';

export function withBreaker(breakers: Breakers): Layer {
  return (next) => async (call) => {
    const name = call.attempt.upstream.metadata.name;
    if (!breakers.tryAcquire(name)) return { kind: 'skipped', why: 'breaker_open' };
    let verdict = false;
    try {
      const outcome = await next(call);
      if (outcome.kind === 'failed') {
        breakers.failure(name);
        verdict = true;
      } else if (outcome.kind === 'answered') {
        const status = outcome.response.statusCode;
        // 401/403: our credential is wrong, a configuration error the breaker must not hide.
        if (status === 429 || status >= 500) breakers.failure(name);
        else if (status < 300 && call.holdVerdict) {
          // A 200 stream may still fail before its content (an overload event): the fallback decides.
          call.verdict = (healthy) => {
            if (healthy === null) breakers.release(name);
            else if (healthy) breakers.success(name);
            else breakers.failure(name);
          };
        } else if (status !== 401 && status !== 403) breakers.success(name);
        verdict = status !== 401 && status !== 403;
      }
      return outcome;
    } finally {
      if (!verdict) breakers.release(name);
    }
  };
}
