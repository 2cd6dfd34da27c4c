// CORS for browser clients, off unless configured (TOLLGATE_CORS_ORIGINS, or an Account's
// spec.cors.allowedOrigins). It runs before authentication because a preflight never carries the
// key: an OPTIONS preflight from an allowed origin is answered 204 here, echoing the requested
// headers. Every other answer to an allowed origin (errors and streams included) carries
// Access-Control-Allow-Origin and Access-Control-Expose-Headers, set before anything is written.
//
// Which origins: the global list, plus each Account's own list. Before the key is known (preflight,
// 401) an origin listed by any account passes; once the key is known, only the global list and that
// key's account count, so one app's origin cannot read another account's answers.
import type { Context } from 'koa';
import type { Account } from '@tollgate/crds';
import type { ResourceStore } from '../resources/store.ts';
import type { Snapshot } from '../resources/snapshot.ts';
import type { GatewayState } from './state.ts';

/** What a browser app needs to read: request ids (the SDKs' requestID), rate limits and retry hints. */
export const EXPOSED_HEADERS = [
  'x-request-id', 'X-Service-Request-Id',
  'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens',
  'retry-after', 'retry-after-ms', 'x-should-retry', 'openai-model', 'openai-processing-ms',
].join(', ');

const ALLOWED_METHODS = 'GET, POST, DELETE, HEAD, OPTIONS';
/** How long a browser may cache a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE = '600';
/** Requested header lists are echoed; a browser sends a few dozen names at most. */
const MAX_REQUESTED_HEADERS_LENGTH = 4096;
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;

export interface CorsPolicy {
  /**
   * Runs before authentication, on every request: sets the CORS headers for an allowed origin, and
   * answers a preflight (true: nothing more to do). Not a Koa layer of its own, as every layer costs.
   */
  beforeAuthentication(ctx: Context): boolean;
  /** Called once the key is known: withdraws the CORS headers if the key's account does not allow the origin. */
  afterAuthentication(ctx: Context): void;
}

/** Parses TOLLGATE_CORS_ORIGINS: a comma-separated list of origins, or '*'. */
export function parseOrigins(value: string | undefined): string[] {
  if (!value) return [];
  return value.split(',').map((o) => normalise(o.trim())).filter((o) => o !== '');
}

export function createCors(globalOrigins: readonly string[], store: ResourceStore): CorsPolicy {
  const global = new Set(globalOrigins.map(normalise));
  const anyAccount = new WeakMap<Snapshot, Set<string>>();
  const accountOrigins = (snapshot: Snapshot): Set<string> => {
    let origins = anyAccount.get(snapshot);
    if (!origins) {
      origins = new Set();
      for (const account of snapshot.accounts.values()) for (const origin of originsOf(account)) origins.add(origin);
      anyAccount.set(snapshot, origins);
    }
    return origins;
  };
  const allowedBeforeKey = (origin: string) => global.has('*') || global.has(origin) || accountOrigins(store.current).has(origin) || accountOrigins(store.current).has('*');

  const beforeAuthentication = (ctx: Context): boolean => {
    const origin = ctx.get('origin');
    if (!origin || !allowedBeforeKey(normalise(origin))) return false;
    const res = ctx.res;
    res.setHeader('Access-Control-Allow-Origin', global.has('*') ? '*' : origin);
    res.setHeader('Vary', 'Origin');
    const requestedMethod = ctx.get('access-control-request-method');
    if (ctx.method === 'OPTIONS' && requestedMethod) {
      res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
      const requestedHeaders = ctx.get('access-control-request-headers');
      if (requestedHeaders && requestedHeaders.length <= MAX_REQUESTED_HEADERS_LENGTH && HEADER_LIST.test(requestedHeaders.trim())) {
        res.setHeader('Access-Control-Allow-Headers', requestedHeaders.trim());
        res.setHeader('Vary', 'Origin, Access-Control-Request-Headers');
      }
      res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE);
      ctx.status = 204;
      return true;
    }
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    return false;
  };

  const afterAuthentication = (ctx: Context) => {
    if (!ctx.res.hasHeader('Access-Control-Allow-Origin') || global.has('*')) return;
    const origin = normalise(ctx.get('origin'));
    if (global.has(origin)) return;
    const account = (ctx.state as GatewayState).exchange.principal?.account;
    const own = account ? originsOf(account) : [];
    if (own.includes(origin) || own.includes('*')) return;
    ctx.res.removeHeader('Access-Control-Allow-Origin');
    ctx.res.removeHeader('Access-Control-Expose-Headers');
  };

  return { beforeAuthentication, afterAuthentication };
}

function originsOf(account: Account): string[] {
  return (account.spec.cors?.allowedOrigins ?? []).map(normalise);
}

/** Origins compare as browsers send them: scheme://host[:port], lower-case, no trailing slash. */
function normalise(origin: string): string {
  return origin.toLowerCase().replace(/\/+$/, '');
}
