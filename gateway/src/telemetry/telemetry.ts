// The gateway's telemetry, built once in server.ts: Prometheus metrics and their listener, tracing
// (when OTEL_* configures it), the usage ledger behind `/usage`, and the requests in flight. It
// follows each request's exchange: begin() at the edge, the attempt observer while upstream calls
// go out (client spans, traceparent), and an end hook that reads every figure from the exchange.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { EndHook, Exchange } from '../exchange/exchange.ts';
import type { ResourceStore } from '../resources/store.ts';
import type { Breakers } from '../upstream/breaker.ts';
import type { AttemptObserver } from '../upstream/with-observer.ts';
import { GatewayMetrics } from './metrics.ts';
import { startMetricsServer, type MetricsServer } from './metrics-server.ts';
import { parseMoney } from '../limits/money.ts';
import { OTHER } from './genai.ts';
import { finishRequest, recordOf, type FinishedRequest } from './request-record.ts';
import { RequestTelemetry, type TraceIds } from './request-telemetry.ts';
import { startTracing, type Tracing, type TracingConfig } from './tracing.ts';
import { UsageLedger, type ClusterUsage } from './usage-ledger.ts';

/** pino's number for the debug level. */
const DEBUG = 20;

export interface TelemetryConfig {
  /** The metrics listener's port (0: any free port); null switches metrics (not /usage) off. */
  metricsPort: number | null;
  metricsHost: string;
  /** Per-account and per-plan token series: the number of accounts that get their own label (0 = none). */
  accountSeries: number;
  tracing: TracingConfig;
}

export interface TelemetrySources {
  store: ResourceStore;
  /** The requests in flight (the open exchanges), for the in-flight gauges. */
  inflight: () => Iterable<Exchange>;
  /** The resource source's status: when it last confirmed its view, and what it refuses now. */
  sourceStatus(): { syncedAt: number | null; refused: number };
  breakers: Breakers;
  clock: () => number;
  /** The currency of prices and spend (TOLLGATE_CURRENCY), named in `/usage`. */
  currency?: string;
  clusterUsage?: ClusterUsage;
  /** This process's month per day and model for one account (`GET /usage/days?account=`), read by the account area's pods. */
  accountDays?: (account: string) => unknown;
  /** Shared mode only: the shared store's health and the limit calls its failure policy answered. */
  sharedStore?: () => { degraded: boolean; fallbacks: number };
}

export class Telemetry {
  readonly metrics: GatewayMetrics | null;
  readonly usage: UsageLedger;
  readonly #store: ResourceStore;
  readonly #log: Logger;
  #tracing: Tracing | null = null;
  readonly #captureContent: boolean;
  #server: MetricsServer | null = null;

  private constructor(config: TelemetryConfig, sources: TelemetrySources, log: Logger) {
    this.#log = log;
    this.#store = sources.store;
    this.#captureContent = config.tracing.captureContent === true;
    this.usage = new UsageLedger(sources.clock, undefined, sources.currency);
    // Each request's RequestTelemetry is found from its exchange (`exchange.observed`), not kept in a
    // Map or Set of its own: a collection every request passes through keeps finished requests alive
    // through young collections (exchange/open-list.ts).
    const inflight = function* () {
      for (const exchange of sources.inflight()) {
        const request = requestOf(exchange);
        if (request) yield request;
      }
    };
    this.metrics =
      config.metricsPort === null
        ? null
        : new GatewayMetrics(
            {
              inflight,
              snapshot: () => {
                const snapshot = sources.store.current;
                const counts = { Upstream: snapshot.upstreams.size, Model: snapshot.models.size, Plan: snapshot.plans.size, Account: snapshot.accounts.size, ApiKey: snapshot.keysByHash.size };
                return { generation: sources.store.generation, counts };
              },
              lastSyncAt: () => sources.sourceStatus().syncedAt,
              refusedObjects: () => sources.sourceStatus().refused,
              circuits: function* () {
                for (const name of sources.store.current.upstreams.keys()) yield { upstream: name, state: sources.breakers.stateOf(name) };
              },
              sharedStore: sources.sharedStore,
              accountSpend: () => this.#accountSpend(),
            },
            { accountSeries: config.accountSeries, currency: sources.currency },
          );
  }

  static async start(config: TelemetryConfig, sources: TelemetrySources, log: Logger, serviceVersion = '0.1.0'): Promise<Telemetry> {
    const telemetry = new Telemetry(config, sources, log);
    if (config.tracing.enabled) telemetry.#tracing = await startTracing(log, serviceVersion);
    telemetry.#server = await startMetricsServer({
      port: config.metricsPort ?? 0,
      host: config.metricsHost,
      metrics: telemetry.metrics,
      usage: telemetry.usage,
      clusterUsage: sources.clusterUsage,
      accountDays: sources.accountDays,
      onError: (error) => log.error({ err: error }, 'metrics listener error'),
    });
    return telemetry;
  }

  /** The metrics listener's address (its port is TOLLGATE_METRICS_PORT, or a free one in tests). */
  get metricsURL(): string {
    return this.#server?.url ?? '';
  }

  get tracingOn(): boolean {
    return this.#tracing !== null;
  }

  /** A request arrives (the edge, right after its exchange is begun): its server span, its figures while in flight. */
  begin(exchange: Exchange, headers: IncomingHttpHeaders, res: ServerResponse): void {
    const request = new RequestTelemetry(exchange, res, headers, this.#tracing, this.#captureContent);
    exchange.observed = request;
    exchange.trace = request.ids();
  }

  /** Client spans and traceparent for upstream attempts (upstream/runtime.ts's observer). */
  readonly attempts: AttemptObserver = {
    started: (exchange, record, upstream) => requestOf(exchange)?.attemptStarted(upstream, record.model, exchange.attempts.length),
    headers: (exchange, headers) => requestOf(exchange)?.inject(headers),
    ended: (exchange, status, error, relayed) => requestOf(exchange)?.attemptEnded(status, error, relayed),
  };

  /**
   * The end hook every exchange runs (before the access line): metrics, spans, usage, and one debug
   * line per upstream attempt, all from the exchange.
   */
  readonly endHook: EndHook = (exchange) => {
    const request = requestOf(exchange);
    if (!request) return;
    exchange.observed = null;
    // Telemetry must never cost a request its access line (prom-client throws on a value it cannot record).
    try {
      const snapshot = exchange.principal?.snapshot ?? this.#store.current;
      const record = recordOf(exchange, snapshot);
      const ids = exchange.trace;
      // An exemplar names a trace only when that trace was kept.
      record.traceId = ids?.sampled ? ids.traceId : null;
      const finished = finishRequest(record, snapshot);
      this.metrics?.record(finished);
      request.finish(finished);
      if (finished.account !== null && finished.status < 400) {
        // Per model only under names the snapshot knows (the model label), so the ledger stays bounded.
        const model = finished.model !== '' && finished.model !== OTHER ? finished.model : null;
        this.usage.record({ account: finished.account, key: exchange.principal?.key.metadata.name, model, usage: finished.usage, cost: exchange.cost });
      }
      // levelVal, not isLevelEnabled(): a number compared, where pino looks the level up by name.
      if (finished.attempts.length > 0 && this.#log.levelVal <= DEBUG) this.#logAttempts(finished, ids);
    } catch (error) {
      this.#log.error({ err: error, requestId: exchange.id }, 'telemetry failed for a request');
    }
  };

  /** This replica's spend this month per account, beside the account's spendPerMonth (scrape time only). */
  *#accountSpend(): Iterable<{ account: string; spent: number; budget: number | null }> {
    const snapshot = this.#store.current;
    for (const [account, counts] of this.usage.accountCounts()) {
      const plan = snapshot.accounts.get(account)?.spec.plan;
      const budget = plan === undefined ? undefined : snapshot.plans.get(plan)?.spec.limits?.spendPerMonth;
      yield { account, spent: counts.spendMicros, budget: budget === undefined ? null : parseMoney(budget) };
    }
  }

  #logAttempts(request: FinishedRequest, ids: TraceIds | null): void {
    request.attempts.forEach((attempt, index) => {
      const line: Record<string, unknown> = {
        requestId: request.requestId,
        attempt: index + 1,
        upstream: attempt.upstream,
        serverAddress: attempt.address,
        model: attempt.model,
        status: attempt.status ?? null,
        outcome: attempt.outcome,
        errorType: attempt.errorType,
        durationMs: Math.round(attempt.durationS * 1e6) / 1000,
      };
      if (ids) line.trace_id = ids.traceId;
      this.#log.debug(line, 'upstream attempt');
    });
  }

  async close(): Promise<void> {
    await this.#server?.close();
    await this.#tracing?.shutdown();
  }
}

/** The RequestTelemetry that begin() left on an exchange, if any. */
function requestOf(exchange: Exchange): RequestTelemetry | null {
  return exchange.observed instanceof RequestTelemetry ? exchange.observed : null;
}
