// The innermost layer: the request on the upstream's pool, with the timeouts the layers above set.
// Failures before the answer's headers are reported, not thrown, so the fallback can go on.
import type { Dispatcher } from 'undici';
import type { Upstream } from '@tollgate/crds';
import { sinceAttempt } from '../exchange/exchange.ts';
import type { CallUpstream } from './call.ts';
import { settingsOf, upstreamPath } from './settings.ts';

export function dispatchOn(dispatcherFor: (upstream: Upstream) => Dispatcher): CallUpstream {
  return async (call) => {
    const { attempt, request, record, aborts } = call;
    if (aborts.aborted) return { kind: 'aborted' };
    const settings = settingsOf(attempt.upstream);
    try {
      const response = await dispatcherFor(attempt.upstream).request({
        path: call.path ?? upstreamPath(settings, request.endpoint, request.search),
        method: request.method as Dispatcher.HttpMethod,
        headers: call.headers,
        body: call.body,
        signal: aborts,
        headersTimeout: call.headersTimeoutMs ?? settings.firstByteMs,
        bodyTimeout: call.idleTimeoutMs ?? settings.idleMs,
      });
      record.headersMs = sinceAttempt(record);
      record.status = response.statusCode;
      return { kind: 'answered', response };
    } catch (error) {
      record.headersMs = sinceAttempt(record);
      if (aborts.aborted) return { kind: 'aborted' };
      // Nothing reached the client yet, so every failure before the answer's headers is worth a retry.
      return { kind: 'failed', code: (error as { code?: string }).code ?? 'UND_ERR_SOCKET' };
    }
  };
}
