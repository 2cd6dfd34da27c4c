// OpenAI's rate-limit headers and retry hints. Reset times use OpenAI's duration format ("20ms",
// "1.5s", "6m0s"); Retry-After is whole seconds (rounded up, so a client never comes back early)
// and retry-after-ms is what the official SDKs actually wait on.

export interface WindowReport {
  limit: number;
  remaining: number;
  resetMs: number;
}

export function formatDuration(ms: number): string {
  const rounded = Math.max(0, Math.ceil(ms));
  if (rounded < 1000) return `${rounded}ms`;
  if (rounded < 60_000) return `${trimDecimals(rounded / 1000)}s`;
  const minutes = Math.floor(rounded / 60_000);
  return `${minutes}m${trimDecimals((rounded - minutes * 60_000) / 1000)}s`;
}

function trimDecimals(seconds: number): string {
  return String(Math.round(seconds * 1000) / 1000);
}

const NAMES = {
  requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
  tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
} as const;

/** Adds the three headers of one kind to `into` (one object per answer, not one per kind). */
export function rateLimitHeaders(kind: 'requests' | 'tokens', report: WindowReport, into: Record<string, string> = {}): Record<string, string> {
  const [limit, remaining, reset] = NAMES[kind];
  into[limit] = String(report.limit);
  into[remaining] = String(Math.max(0, report.remaining));
  into[reset] = formatDuration(report.resetMs);
  return into;
}

export function retryHeaders(waitMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(waitMs));
  return { 'Retry-After': String(Math.ceil(ms / 1000)), 'retry-after-ms': String(ms) };
}
