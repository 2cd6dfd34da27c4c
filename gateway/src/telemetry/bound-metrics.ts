// Histograms and counters for the series recorded on every request, registered in a prom-client
// Registry like any of its own metrics (the Registry renders them, in the Prometheus text format or
// OpenMetrics with exemplars). Why not prom-client's Histogram and Counter for these: each of their
// observations validates and hashes its label object, and an exemplar adds a second hash, a label
// check and an object — about five of those per proxied request were most of what metrics cost.
// Here a label set is looked up once per observation by its values (a joined string and a Map), and
// an observation is a bucket search and three additions; what it costs to format a series is paid at
// scrape time instead.
import type { Registry, RegistryContentType } from 'prom-client';

interface SeriesLabels {
  [name: string]: string;
}

/** What prom-client's Registry reads from a metric (see Registry#getMetricsAsString). */
interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: SeriesLabels;
  value: number;
  metricName?: string;
  exemplar?: { labelSet: Record<string, string>; value: number; timestamp: number } | null;
}

/** One label set's values joined by a character no label value (snapshot names, fixed lists) holds. */
const SEPARATOR = '\u0001';

abstract class BoundMetric<Series> {
  name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum';
  abstract readonly type: 'histogram' | 'counter';
  #series = new Map<string, { labels: SeriesLabels; series: Series }>();

  constructor(config: { name: string; help: string; labelNames: readonly string[]; registers: Registry<RegistryContentType>[] }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    // The Registry only needs the metric's shape; the cast is to its class type.
    for (const registry of config.registers) registry.registerMetric(this as never);
  }

  protected abstract create(): Series;

  /** The series of these label values (in labelNames' order), created on first use. */
  protected seriesOf(values: readonly string[]): Series {
    const key = values.length === 1 ? values[0] : values.join(SEPARATOR);
    let entry = this.#series.get(key);
    if (!entry) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.name}: ${values.length} label values for ${this.labelNames.length} labels`);
      const labels: SeriesLabels = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]));
      entry = { labels, series: this.create() };
      this.#series.set(key, entry);
    }
    return entry.series;
  }

  protected entries(): Iterable<{ labels: SeriesLabels; series: Series }> {
    return this.#series.values();
  }

  reset(): void {
    this.#series = new Map();
  }

  abstract getForPromString(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: string }>;

  /** The JSON form (Registry#getMetricsAsJSON): every label on the value itself. */
  async get() {
    const metric = await this.getForPromString();
    return { ...metric, values: metric.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) };
  }
}

/** One histogram series: cumulative counts are formed at scrape time from per-bucket counts. */
class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** The latest exemplar per bucket (the last slot is +Inf): its value, time and ids. */
  exemplars: Array<{ value: number; timestamp: number; traceId: string | null; requestId: string } | undefined> | null;

  constructor(buckets: number, exemplars: boolean) {
    this.counts = new Float64Array(buckets + 1);
    this.exemplars = exemplars ? new Array(buckets + 1) : null;
  }
}

export class BoundHistogram extends BoundMetric<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: Float64Array;
  readonly #exemplars: boolean;

  constructor(config: { name: string; help: string; labelNames: readonly string[]; buckets: readonly number[]; registers: Registry<RegistryContentType>[]; exemplars?: boolean }) {
    super(config);
    this.#bounds = Float64Array.from(config.buckets);
    this.#exemplars = config.exemplars === true;
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.#bounds.length, this.#exemplars);
  }

  /**
   * Records `value` in the series of `labelValues`. With exemplars on, the observation becomes its
   * bucket's exemplar, carrying the request id and (when the trace was kept) the trace id.
   */
  observe(labelValues: readonly string[], value: number, requestId?: string, traceId?: string | null): void {
    if (!Number.isFinite(value)) return;
    const series = this.seriesOf(labelValues);
    const bounds = this.#bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]) bucket++;
    series.counts[bucket]++;
    series.sum += value;
    series.count++;
    if (series.exemplars && requestId !== undefined) series.exemplars[bucket] = { value, timestamp: Date.now() / 1000, traceId: traceId ?? null, requestId };
  }

  async getForPromString() {
    const values: ExportedValue[] = [];
    const name = `${this.name}_bucket`;
    for (const { labels, series } of this.entries()) {
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += series.counts[i];
        const exemplar = series.exemplars?.[i];
        values.push({
          labels: { le: i < this.#bounds.length ? this.#bounds[i] : '+Inf' },
          sharedLabels: labels,
          value: cumulative,
          metricName: name,
          exemplar: exemplar ? { labelSet: exemplarLabels(exemplar.traceId, exemplar.requestId), value: exemplar.value, timestamp: exemplar.timestamp } : null,
        });
      }
      values.push({ labels: {}, sharedLabels: labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

class CounterSeries {
  value = 0;
}

export class BoundCounter extends BoundMetric<CounterSeries> {
  readonly type = 'counter';

  protected create(): CounterSeries {
    return new CounterSeries();
  }

  inc(labelValues: readonly string[], by = 1): void {
    if (!Number.isFinite(by) || by < 0) return;
    this.seriesOf(labelValues).value += by;
  }

  async getForPromString() {
    const values: ExportedValue[] = [];
    for (const { labels, series } of this.entries()) values.push({ labels, value: series.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

/**
 * OpenMetrics caps an exemplar's labels at 128 characters (names and values together); a request id
 * chosen by a proxy in front may be long, and is then left out rather than cut into a wrong id.
 */
function exemplarLabels(traceId: string | null, requestId: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let size = 0;
  if (traceId) {
    labels.trace_id = traceId;
    size += 8 + traceId.length;
  }
  if (size + 10 + requestId.length <= 128) labels.request_id = requestId;
  return labels;
}
