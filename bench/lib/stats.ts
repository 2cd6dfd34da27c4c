// Percentiles over raw samples (milliseconds as floats): the bench's claims are about fractions of a
// millisecond, finer than autocannon's integer-millisecond histogram.
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export function sortedCopy(values: number[]): Float64Array {
  return Float64Array.from(values).sort();
}

export function median(values: number[]): number {
  return percentile(sortedCopy(values), 50);
}

export interface Percentiles {
  p50: number;
  p99: number;
  count: number;
}

export function percentiles(values: number[]): Percentiles {
  const sorted = sortedCopy(values);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), count: sorted.length };
}
