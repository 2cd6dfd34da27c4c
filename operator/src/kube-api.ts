// The operator's writes to the Kubernetes API, as plain JSON over HTTP with the connection and
// credentials of client-node's KubeConfig (token, client certificate, CA, exec plugins). Plain HTTP
// rather than client-node's typed clients because the writes need exact wire control: merge patches
// with a resourceVersion precondition (a stale leader's write is refused with 409 rather than
// applied), status through the /status subresource, and Lease times in the API's MicroTime format.
// Reads go through the shared reflectors (@tollgate/kube), never through here, except the Lease.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { GROUP, PLURALS, VERSION, type Kind } from '@tollgate/crds';

/** A failure answered by the API server (a Status object), or the connection failing. */
export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly reason: string;
  constructor(statusCode: number, reason: string, message: string) {
    super(message);
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

export const isConflict = (error: unknown) => error instanceof KubeApiError && error.statusCode === 409;
export const isNotFound = (error: unknown) => error instanceof KubeApiError && error.statusCode === 404;
export const isAlreadyExists = (error: unknown) => error instanceof KubeApiError && error.statusCode === 409 && error.reason === 'AlreadyExists';

export type JsonObject = Record<string, any>;

export interface KubeApi {
  namespace: string;
  /** `signal` ends the call early (shutdown, leadership lost); every call also has its own timeout. */
  request(method: string, path: string, body?: unknown, contentType?: string, signal?: AbortSignal): Promise<JsonObject>;
}

/** The same API with every call also ended by the signal `current()` returns when it is made. */
export function abortable(api: KubeApi, current: () => AbortSignal): KubeApi {
  return {
    namespace: api.namespace,
    request: (method, path, body, contentType, signal) => api.request(method, path, body, contentType, signal ? AbortSignal.any([signal, current()]) : current()),
  };
}

/** Paths of the collections and objects the operator writes, in its namespace. */
export function paths(namespace: string) {
  const ns = encodeURIComponent(namespace);
  const custom = (kind: Kind, name?: string) => `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURALS[kind]}${name ? `/${encodeURIComponent(name)}` : ''}`;
  return {
    custom,
    status: (kind: Kind, name: string) => `${custom(kind, name)}/status`,
    secrets: (name?: string) => `/api/v1/namespaces/${ns}/secrets${name ? `/${encodeURIComponent(name)}` : ''}`,
    events: () => `/api/v1/namespaces/${ns}/events`,
    lease: (name?: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases${name ? `/${encodeURIComponent(name)}` : ''}`,
  };
}

const REQUEST_TIMEOUT_MS = 15_000;

export function createKubeApi(config: KubeConfig, namespace: string, userAgent = 'tollgate-operator'): KubeApi {
  const server = config.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no cluster server');
  const base = new URL(server);
  const transport = base.protocol === 'https:' ? https : http;
  return {
    namespace,
    async request(method, path, body, contentType = 'application/json', signal) {
      const options: https.RequestOptions = { method, headers: {} };
      await config.applyToHTTPSOptions(options);
      const text = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = { ...(options.headers as Record<string, string>), accept: 'application/json', 'user-agent': userAgent };
      if (text !== undefined) Object.assign(headers, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
      const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
      return new Promise<JsonObject>((resolve, reject) => {
        // `timeout` is the socket's idle time; the signal ends the call at once, wherever it is
        // (connecting, waiting for the answer, or half way through reading it).
        const onAbort = () => {
          request.destroy();
          reject(new Error(`${method} ${path}: ${abortReason(signal!)}`));
        };
        const settle = <T>(finish: (value: T) => void) => (value: T) => {
          signal?.removeEventListener('abort', onAbort);
          finish(value);
        };
        const ok = settle(resolve);
        const fail = settle(reject);
        const request = transport.request(url, { ...options, headers, timeout: REQUEST_TIMEOUT_MS }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', fail);
          response.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            let parsed: JsonObject = {};
            try {
              parsed = raw ? JSON.parse(raw) : {};
            } catch {
              parsed = { message: raw.slice(0, 200) };
            }
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) return ok(parsed);
            fail(new KubeApiError(status, String(parsed.reason ?? 'Unknown'), `${method} ${path}: HTTP ${status}: ${String(parsed.message ?? '').slice(0, 300)}`));
          });
        });
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
        request.on('timeout', () => request.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
        request.on('error', fail);
        request.end(text);
      });
    },
  };
}

function abortReason(signal: AbortSignal): string {
  const reason = signal.reason as { name?: string; message?: string } | undefined;
  return reason?.name === 'TimeoutError' ? 'no answer in time' : `abandoned (${reason?.message ?? 'aborted'})`;
}

/** RFC 3339 with microseconds, the API's MicroTime (Lease renewTime/acquireTime, Event eventTime). */
export function microTime(at = new Date()): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** RFC 3339 to the second, the API's Time (conditions' lastTransitionTime). */
export function isoSeconds(at = new Date()): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
