// Per-upstream timeouts and pool size, with the defaults the brief names.
import type { Upstream } from '@tollgate/crds';
import { baseURLOf } from '../providers/endpoints.ts';

export interface UpstreamSettings {
  baseURL: URL;
  /** The base URL's path, ending in `/`. */
  basePath: string;
  /** Where calls go (host and port of the base URL), as each attempt records it. */
  server: Readonly<{ address: string; port: number }>;
  connectMs: number;
  firstByteMs: number;
  totalMs: number;
  idleMs: number;
  maxConnections: number;
}

export const DEFAULTS = { connectMs: 10_000, firstByteMs: 60_000, totalMs: 120_000, idleMs: 30_000, maxConnections: 256 };
/** Image generation routinely takes longer than text; OpenAI's own guidance is minutes. */
export const IMAGE_TOTAL_MS = 300_000;

// Resources are never changed in place: a changed Upstream is a new object in a new snapshot (the
// file source parses the file again, the Kubernetes reflector stores each version as it arrives), so
// settings worked out once per object stay right for as long as the object is in use.
const cache = new WeakMap<Upstream, Readonly<UpstreamSettings>>();

export function settingsOf(upstream: Upstream): Readonly<UpstreamSettings> {
  let settings = cache.get(upstream);
  if (!settings) {
    settings = computeSettings(upstream);
    cache.set(upstream, settings);
  }
  return settings;
}

function computeSettings(upstream: Upstream): Readonly<UpstreamSettings> {
  const t = upstream.spec.timeouts ?? {};
  const base = new URL(baseURLOf(upstream));
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return Object.freeze({
    baseURL: base,
    basePath: base.pathname,
    server: Object.freeze({ address: base.hostname, port: base.port ? Number(base.port) : base.protocol === 'https:' ? 443 : 80 }),
    connectMs: t.connectMs ?? DEFAULTS.connectMs,
    firstByteMs: t.firstByteMs ?? DEFAULTS.firstByteMs,
    totalMs: t.totalMs ?? DEFAULTS.totalMs,
    idleMs: t.idleMs ?? DEFAULTS.idleMs,
    maxConnections: upstream.spec.maxConnections ?? DEFAULTS.maxConnections,
  });
}

/** `/chat/completions` under the upstream's base path (which usually ends in /v1/). */
export function upstreamPath(settings: UpstreamSettings, endpoint: string, search = ''): string {
  return `${settings.basePath}${endpoint.charCodeAt(0) === 0x2f ? endpoint.slice(1) : endpoint}${search}`;
}
