// Every Prometheus series the gateway exposes, defined in one place (prom-client), and the one
// function that records a finished request into them. The series budget (docs/operations.md) follows
// from the label sets below: each label takes a value from a fixed list, from the snapshot (model,
// upstream, plan names) or from a capped set (accounts, behind a switch) — never a key, a request id
// or free text.
import { collectDefaultMetrics, Counter, Gauge, Registry, type RegistryContentType } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';
import { MICROS } from '../limits/money.ts';
import { BUCKETS, OTHER } from './genai.ts';
import type { FinishedAttempt, FinishedRequest } from './request-record.ts';

/** What the gauges read at scrape time, so that nothing is counted on the request path for them. */
export interface MetricsSources {
  /** Requests in flight: each one's response (for its unsent bytes) and whether its stream has started. */
  inflight(): Iterable<{ bufferedBytes(): number; streaming: boolean }>;
  snapshot(): { generation: number; counts: Record<string, number> };
  /** When the resource source last confirmed its view (ms since the epoch); null before the first. */
  lastSyncAt(): number | null;
  /** Objects (or whole files) refused by the resource source right now. */
  refusedObjects(): number;
  /** Circuit state per upstream. */
  circuits(): Iterable<{ upstream: string; state: 'closed' | 'open' | 'half_open' }>;
  /** The shared store (Redis), when one is configured: whether it is degraded, and the limit calls its failure policy answered. */
  sharedStore?(): { degraded: boolean; fallbacks: number };
  /** This replica's spend this month per account (micros) and the account's spendPerMonth (micros, null: none). */
  accountSpend?(): Iterable<{ account: string; spent: number; budget: number | null }>;
}

export interface MetricsOptions {
  /** Per-account series: at most this many accounts get their own label value, the rest `other`; 0 = none. */
  accountSeries: number;
  /** The currency of prices (TOLLGATE_CURRENCY): the unit in the spend series' names. */
  currency?: string;
}

const GENAI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_response_model', 'error_type'] as const;
const CLIENT_LABELS = [...GENAI_LABELS, 'server_address'] as const;
const CIRCUIT_STATES = ['closed', 'open', 'half_open'] as const;
const RESOURCE_KINDS = ['Upstream', 'Model', 'Plan', 'Account', 'ApiKey'] as const;

export class GatewayMetrics {
  /** Created as OpenMetrics, which prom-client requires of exemplars; the listener renders either format. */
  readonly registry = new Registry<RegistryContentType>();
  readonly #accountCap: number;
  readonly #accounts = new Set<string>();

  // The GenAI conventions: the gateway as a server to its clients, and as a client of its upstreams.
  // Recorded on every request: bound series (bound-metrics.ts), label values in the order declared.
  readonly serverDuration: BoundHistogram;
  readonly timeToFirstToken: BoundHistogram;
  readonly timePerOutputToken: BoundHistogram;
  readonly clientDuration: BoundHistogram;
  readonly clientTokens: BoundHistogram;

  // Tollgate's own.
  readonly requests: BoundCounter;
  readonly attempts: BoundCounter;
  readonly authFailures: Counter<'reason'>;
  readonly paymentRequired: Counter<'gen_ai_request_model'>;
  readonly rateLimited: Counter<'limit'>;
  readonly fallbacks: Counter<'upstream'>;
  readonly accountTokens: Counter<'account' | 'gen_ai_token_type'>;
  readonly planTokens: Counter<'plan' | 'gen_ai_token_type'>;
  readonly spend: Counter<'gen_ai_request_model' | 'plan'>;

  constructor(sources: MetricsSources, options: MetricsOptions) {
    this.#accountCap = options.accountSeries;
    this.registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const registers = [this.registry];
    const genai = (name: string, help: string, buckets: readonly number[]) => new BoundHistogram({ name, help, buckets, labelNames: GENAI_LABELS, registers, exemplars: true });
    this.serverDuration = genai('gen_ai_server_request_duration_seconds', 'GenAI server: time from the request arriving to its answer ending (gen_ai.server.request.duration).', BUCKETS.duration);
    this.timeToFirstToken = genai('gen_ai_server_time_to_first_token_seconds', 'GenAI server: time to the first byte of a streamed answer (gen_ai.server.time_to_first_token).', BUCKETS.timeToFirstToken);
    this.timePerOutputToken = genai('gen_ai_server_time_per_output_token_seconds', 'GenAI server: time per output token after the first, for streamed answers (gen_ai.server.time_per_output_token).', BUCKETS.timePerOutputToken);
    this.clientDuration = new BoundHistogram({
      name: 'gen_ai_client_operation_duration_seconds',
      help: 'GenAI client: duration of one upstream attempt, to the end of its answer (gen_ai.client.operation.duration).',
      buckets: BUCKETS.duration,
      labelNames: CLIENT_LABELS,
      registers,
      exemplars: true,
    });
    this.clientTokens = new BoundHistogram({
      name: 'gen_ai_client_token_usage',
      help: 'GenAI client: tokens per upstream answer, by token type input/output (gen_ai.client.token.usage).',
      buckets: BUCKETS.tokens,
      labelNames: [...CLIENT_LABELS, 'gen_ai_token_type'],
      registers,
    });

    this.requests = new BoundCounter({ name: 'tollgate_http_requests_total', help: 'Requests answered, by route pattern, method, status and error code (empty on success).', labelNames: ['route', 'method', 'status', 'code'], registers });
    this.authFailures = new Counter({ name: 'tollgate_auth_failures_total', help: 'Requests refused with 401, by which check failed.', labelNames: ['reason'], registers });
    this.paymentRequired = new Counter({ name: 'tollgate_payment_required_total', help: "Requests refused with 402: the model exists but is outside the account's plan.", labelNames: ['gen_ai_request_model'], registers });
    this.rateLimited = new Counter({ name: 'tollgate_rate_limit_rejections_total', help: 'Requests refused with 429 by a plan limit: requests, tokens, concurrency, monthly (tokens) or spend (money).', labelNames: ['limit'], registers });
    this.attempts = new BoundCounter({ name: 'tollgate_upstream_attempts_total', help: 'Upstream attempts by upstream and outcome.', labelNames: ['upstream', 'outcome'], registers });
    this.fallbacks = new Counter({ name: 'tollgate_upstream_fallbacks_total', help: 'Times a request moved on to its next target after this upstream failed before the first byte.', labelNames: ['upstream'], registers });
    this.accountTokens = new Counter({ name: 'tollgate_account_tokens_total', help: `Tokens per account (capped: accounts beyond the cap are 'other'); only with TOLLGATE_METRICS_ACCOUNT_SERIES.`, labelNames: ['account', 'gen_ai_token_type'], registers });
    this.planTokens = new Counter({ name: 'tollgate_plan_tokens_total', help: 'Tokens per plan; only with TOLLGATE_METRICS_ACCOUNT_SERIES.', labelNames: ['plan', 'gen_ai_token_type'], registers });
    // The currency is the unit, in the name as Prometheus puts units (tollgate_spend_usd_total).
    const currency = options.currency ?? 'USD';
    const unit = currency.toLowerCase();
    this.spend = new Counter({ name: `tollgate_spend_${unit}_total`, help: `Money priced requests cost, in ${currency} (Model pricing), by model and plan.`, labelNames: ['gen_ai_request_model', 'plan'], registers });
    if (this.#accountCap > 0 && sources.accountSpend) {
      const label = (account: string) => this.#accountLabel(account);
      const accountSpend = sources.accountSpend;
      new Gauge({
        name: `tollgate_account_month_spend_${unit}`,
        help: `This replica's spend this calendar month (UTC) per account, in ${currency} (sum over replicas for the account's); only with TOLLGATE_METRICS_ACCOUNT_SERIES.`,
        labelNames: ['account'],
        registers,
        collect() {
          this.reset();
          for (const { account, spent } of accountSpend()) this.inc({ account: label(account) }, spent / MICROS);
        },
      });
      new Gauge({
        name: `tollgate_account_spend_budget_${unit}`,
        help: `The account's spendPerMonth, in ${currency}, for accounts with one; only with TOLLGATE_METRICS_ACCOUNT_SERIES.`,
        labelNames: ['account'],
        registers,
        collect() {
          this.reset();
          for (const { account, budget } of accountSpend()) {
            const name = label(account);
            if (budget !== null && name !== 'other') this.set({ account: name }, budget / MICROS);
          }
        },
      });
    }

    new Gauge({
      name: 'tollgate_inflight_requests',
      help: 'Requests being handled now.',
      registers,
      collect() {
        let count = 0;
        for (const _ of sources.inflight()) count++;
        this.set(count);
      },
    });
    new Gauge({
      name: 'tollgate_open_streams',
      help: 'Event streams being relayed to clients now.',
      registers,
      collect() {
        let count = 0;
        for (const request of sources.inflight()) if (request.streaming) count++;
        this.set(count);
      },
    });
    new Gauge({
      name: 'tollgate_response_buffered_bytes',
      help: 'Bytes written to client responses that their sockets have not taken yet (slow readers).',
      registers,
      collect() {
        let bytes = 0;
        for (const request of sources.inflight()) bytes += request.bufferedBytes();
        this.set(bytes);
      },
    });
    new Gauge({
      name: 'tollgate_snapshot_generation',
      help: 'Generation of the resource snapshot serving requests (increases on every applied change).',
      registers,
      collect() {
        this.set(sources.snapshot().generation);
      },
    });
    new Gauge({
      name: 'tollgate_resources',
      help: 'Resources in the serving snapshot, by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        const { counts } = sources.snapshot();
        for (const kind of RESOURCE_KINDS) this.set({ kind }, counts[kind] ?? 0);
      },
    });
    new Gauge({
      name: 'tollgate_resource_last_sync_timestamp_seconds',
      help: 'When the resource source last confirmed its view (file checked, or Kubernetes caches rebuilt), Unix seconds.',
      registers,
      collect() {
        const at = sources.lastSyncAt();
        if (at !== null) this.set(at / 1000);
      },
    });
    new Gauge({
      name: 'tollgate_resource_refused_objects',
      help: 'Objects (or manifest files) refused by the resource source right now; the last good version keeps serving.',
      registers,
      collect() {
        this.set(sources.refusedObjects());
      },
    });
    new Gauge({
      name: 'tollgate_upstream_circuit_state',
      help: 'Circuit breaker state per upstream: 1 for the current state (closed, open, half_open), 0 for the others.',
      labelNames: ['upstream', 'state'],
      registers,
      collect() {
        // Rebuilt on every scrape so that an upstream removed from the snapshot loses its series.
        this.reset();
        for (const circuit of sources.circuits()) for (const state of CIRCUIT_STATES) this.set({ upstream: circuit.upstream, state }, circuit.state === state ? 1 : 0);
      },
    });
    const sharedStore = sources.sharedStore;
    if (sharedStore) {
      // Only in shared mode: without a shared store there is nothing to be degraded.
      new Gauge({
        name: 'tollgate_shared_store_degraded',
        help: 'Whether the shared store (Redis) is unreachable or failing now (1) or answering (0); while degraded, limits follow their failure policy.',
        registers,
        collect() {
          this.set(sharedStore().degraded ? 1 : 0);
        },
      });
      new Counter({
        name: 'tollgate_shared_store_fallbacks_total',
        help: 'Limit-store calls the failure policy answered (open or closed) because the shared store could not.',
        registers,
        collect() {
          this.reset();
          this.inc(sharedStore().fallbacks);
        },
      });
    }
    // Event-loop delay, GC, heap, RSS, CPU, handles: prom-client's process metrics.
    collectDefaultMetrics({ register: this.registry });
    // Gauges that prom-client names with a counter's `_total` (promtool rejects them); the same
    // figures stay, by type, in nodejs_active_handles and nodejs_active_resources.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name);
  }

  /** Records one finished request and its upstream attempts. */
  record(request: FinishedRequest): void {
    this.requests.inc([request.route, request.method, statusLabel(request.status), request.errorCode ?? '']);
    if (request.status === 401) this.authFailures.inc({ reason: request.errorReason ?? OTHER });
    else if (request.status === 402) this.paymentRequired.inc({ gen_ai_request_model: request.model });
    else if (request.status === 429 && request.errorReason) this.rateLimited.inc({ limit: request.errorReason });

    // The last attempt that was sent is the one that answered or gave up; the ones before it fell back.
    const attempts = request.attempts;
    let lastCall = -1;
    for (let i = 0; i < attempts.length; i++) if (!attempts[i].skipped) lastCall = i;
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i];
      if (attempt.skipped) this.attempts.inc([attempt.upstream, attempt.outcome]);
      else this.#recordAttempt(request, attempt, i < lastCall);
    }
    if (request.cost) this.spend.inc({ gen_ai_request_model: request.model, plan: request.plan ?? 'none' }, request.cost / MICROS);
    if (request.operation === null) return;

    const labels = [request.operation, request.provider, request.model, request.responseModel, request.errorType ?? ''];
    const traceId = request.traceId;
    this.serverDuration.observe(labels, request.durationS, request.requestId, traceId);
    if (request.errorType === null && request.firstByteS !== null) {
      this.timeToFirstToken.observe(labels, request.firstByteS, request.requestId, traceId);
      const output = request.usage?.outputTokens ?? 0;
      if (output > 1) this.timePerOutputToken.observe(labels, (request.durationS - request.firstByteS) / (output - 1), request.requestId, traceId);
    }
    if (this.#accountCap > 0 && request.usage) {
      const account = this.#accountLabel(request.account);
      const plan = request.plan ?? 'none';
      this.accountTokens.inc({ account, gen_ai_token_type: 'input' }, request.usage.inputTokens);
      this.accountTokens.inc({ account, gen_ai_token_type: 'output' }, request.usage.outputTokens);
      this.planTokens.inc({ plan, gen_ai_token_type: 'input' }, request.usage.inputTokens);
      this.planTokens.inc({ plan, gen_ai_token_type: 'output' }, request.usage.outputTokens);
    }
  }

  #recordAttempt(request: FinishedRequest, attempt: FinishedAttempt, fellBack: boolean): void {
    this.attempts.inc([attempt.upstream, attempt.outcome]);
    if (fellBack) this.fallbacks.inc({ upstream: attempt.upstream });
    if (request.operation === null || attempt.outcome === 'client_closed') return;
    const labels = [request.operation, attempt.provider, attempt.model, attempt.responseModelLabel, attempt.errorType ?? '', attempt.address];
    this.clientDuration.observe(labels, attempt.durationS, request.requestId, request.traceId);
    if (attempt.answered && request.usage) {
      labels.push('input');
      this.clientTokens.observe(labels, request.usage.inputTokens);
      labels[labels.length - 1] = 'output';
      this.clientTokens.observe(labels, request.usage.outputTokens);
    }
  }

  #accountLabel(account: string | null): string {
    if (account === null) return 'none';
    if (this.#accounts.has(account)) return account;
    if (this.#accounts.size < this.#accountCap) {
      this.#accounts.add(account);
      return account;
    }
    return 'other';
  }
}

/** HTTP statuses as label values, made once each. */
const STATUS_LABELS = new Map<number, string>();
function statusLabel(status: number): string {
  let label = STATUS_LABELS.get(status);
  if (label === undefined) STATUS_LABELS.set(status, (label = String(status)));
  return label;
}
