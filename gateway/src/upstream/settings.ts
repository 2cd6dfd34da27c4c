// Per-upstream timeouts and pool size, with the defaults the brief names.
import type { Upstream } from '@tollgate/crds';

export interface UpstreamSettings {
  baseURL: URL;
  connectMs: number;
  firstByteMs: number;
  totalMs: number;
  idleMs: number;
  maxConnections: number;
}

export const DEFAULTS = { connectMs: 10_000, firstByteMs: 60_000, totalMs: 120_000, idleMs: 30_000, maxConnections: 256 };
/** Image generation routinely takes longer than text; OpenAI's own guidance is minutes. */
export const IMAGE_TOTAL_MS = 300_000;

export function settingsOf(upstream: Upstream): UpstreamSettings {
  const t = upstream.spec.timeouts ?? {};
  const base = new URL(upstream.spec.baseURL);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return {
    baseURL: base,
    connectMs: t.connectMs ?? DEFAULTS.connectMs,
    firstByteMs: t.firstByteMs ?? DEFAULTS.firstByteMs,
    totalMs: t.totalMs ?? DEFAULTS.totalMs,
    idleMs: t.idleMs ?? DEFAULTS.idleMs,
    maxConnections: upstream.spec.maxConnections ?? DEFAULTS.maxConnections,
  };
}

/** `/chat/completions` under the upstream's base path (which usually ends in /v1/). */
export function upstreamPath(settings: UpstreamSettings, endpoint: string, search = ''): string {
  return `${settings.baseURL.pathname}${endpoint.replace(/^\//, '')}${search}`;
}
