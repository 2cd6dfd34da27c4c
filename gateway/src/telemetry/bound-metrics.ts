// Histograms and counters for the series recorded on every request, registered in a prom-client
// Registry like any of its own metrics (the Registry renders them, in the Prometheus text format or
// OpenMetrics with exemplars). Why not prom-client's Histogram and Counter for these: each of their
// observations validates and hashes its label object, and an exemplar adds a second hash, a label
// check and an object — about five of those per proxied request were most of what metrics cost.
// Here a label set is looked up once per observation by its values, one Map per label (a trie): the
// values are strings the gateway keeps (snapshot names, fixed lists), whose hashes V8 has cached, so
// a lookup hashes nothing new — a key joined from the values was a new string to hash on every
// observation. An observation is then a bucket search and three additions; what it costs to format
// a series is paid at scrape time instead.
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

/** A node of the label trie: the next label's values, and at the last label the series. */
interface LabelNode<Series> {
  next: Map<string, LabelNode<Series>> | null;
  entry: { labels: SeriesLabels; series: Series } | null;
}

const newNode = <Series>(): LabelNode<Series> => ({ next: null, entry: null });

abstract class BoundMetric<Series> {
  name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly aggregator = 'sum';
  abstract readonly type: 'histogram' | 'counter';
  #root: LabelNode<Series> = newNode();
  #entries: Array<{ labels: SeriesLabels; series: Series }> = [];

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
    let node = this.#root;
    for (let i = 0; i < values.length; i++) {
      let next = node.next?.get(values[i]);
      if (next === undefined) {
        next = newNode();
        (node.next ??= new Map()).set(values[i], next);
      }
      node = next;
    }
    return (node.entry ?? this.#add(node, values)).series;
  }

  #add(node: LabelNode<Series>, values: readonly string[]): { labels: SeriesLabels; series: Series } {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name}: ${values.length} label values for ${this.labelNames.length} labels`);
    const labels: SeriesLabels = {};
    this.labelNames.forEach((name, i) => (labels[name] = values[i]));
    const entry = { labels, series: this.create() };
    node.entry = entry;
    this.#entries.push(entry);
    return entry;
  }

  protected entries(): Iterable<{ labels: SeriesLabels; series: Series }> {
    return this.#entries;
  }

  reset(): void {
    this.#root = newNode();
    this.#entries = [];
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
    if (series.exemplars && requestId !== undefined) {
      // The bucket's exemplar is overwritten in place: no object per observation.
      const exemplar = series.exemplars[bucket];
      const timestamp = Date.now() / 1000;
      if (exemplar === undefined) series.exemplars[bucket] = { value, timestamp, traceId: traceId ?? null, requestId };
      else {
        exemplar.value = value;
        exemplar.timestamp = timestamp;
        exemplar.traceId = traceId ?? null;
        exemplar.requestId = requestId;
      }
    }
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
