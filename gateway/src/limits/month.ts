// Monthly budgets run per calendar month, UTC. The month's label is asked on every request that
// carries a budget, so it is formatted once per month, not per request.

let cachedMonth = { label: '', start: 0, end: 0 };

/** "2026-11" for a time in November 2026 (UTC). */
export function monthOf(now: number): string {
  if (now >= cachedMonth.start && now < cachedMonth.end) return cachedMonth.label;
  const date = new Date(now);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  cachedMonth = { label: date.toISOString().slice(0, 7), start, end: nextMonthStart(now).getTime() };
  return cachedMonth.label;
}

/** 00:00 UTC on the 1st of the month after `now`'s: when a budget renews. */
export function nextMonthStart(now: number): Date {
  const date = new Date(now);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1));
}

/** The month before `now`'s: a request settling across midnight of the 1st still finds its period. */
export function previousMonthOf(now: number): string {
  const date = new Date(now);
  return monthOf(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 0));
}
