// Ages as kubectl shows them (Go's duration.HumanDuration): 45s, 3m12s, 5h, 12d.

export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  const days = Math.floor(hours / 24) % 365;
  if (hours < 24 * 365 * 8) return days === 0 ? `${years}y` : `${years}y${days}d`;
  return `${years}y`;
}

/** The age of an RFC 3339 instant, or null when it does not parse. */
export function ageOf(instant: string): string | null {
  const at = Date.parse(instant);
  return Number.isNaN(at) ? null : humanDuration(Date.now() - at);
}
