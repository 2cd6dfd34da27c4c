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

export function rateLimitHeaders(kind: 'requests' | 'tokens', report: WindowReport): Record<string, string> {
  return {
    [`x-ratelimit-limit-${kind}`]: String(report.limit),
    [`x-ratelimit-remaining-${kind}`]: String(Math.max(0, report.remaining)),
    [`x-ratelimit-reset-${kind}`]: formatDuration(report.resetMs),
  };
}

export function retryHeaders(waitMs: number): Record<string, string> {
  const ms = Math.max(1, Math.ceil(waitMs));
  return { 'Retry-After': String(Math.ceil(ms / 1000)), 'retry-after-ms': String(ms) };
}
