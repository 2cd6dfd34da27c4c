// The operator's own metrics, on its own registry (no global state): reconciles by kind and result,
// their durations, errors, status writes, queue depth and whether this replica leads.
import { KINDS } from '@tollgate/crds';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: 'tollgate_operator_reconciles_total', help: 'Reconciles run, by kind and result (written, unchanged, skipped, error).', labelNames: ['kind', 'result'], registers: [this.registry] });
  readonly errors = new Counter({ name: 'tollgate_operator_reconcile_errors_total', help: 'Reconciles that failed and were re-queued with backoff, by kind.', labelNames: ['kind'], registers: [this.registry] });
  readonly durations = new Histogram({ name: 'tollgate_operator_reconcile_duration_seconds', help: 'Time per reconcile, by kind.', labelNames: ['kind'], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5], registers: [this.registry] });
  readonly writes = new Counter({ name: 'tollgate_operator_status_writes_total', help: 'Status subresource writes, by kind.', labelNames: ['kind'], registers: [this.registry] });
  readonly queueDepth = new Gauge({ name: 'tollgate_operator_queue_depth', help: 'Keys waiting in the work queue.', registers: [this.registry] });
  readonly leader = new Gauge({ name: 'tollgate_operator_leader', help: '1 while this replica holds the leader Lease.', registers: [this.registry] });
  readonly probes = new Counter({ name: 'tollgate_operator_upstream_probes_total', help: 'Upstream probes, by result (ok, refused, unreachable, error).', labelNames: ['result'], registers: [this.registry] });

  constructor() {
    // Zero from the start, so that rate() and the reconcile-errors alert see a series before the first error.
    for (const kind of KINDS) this.errors.inc({ kind }, 0);
    collectDefaultMetrics({ register: this.registry, prefix: 'tollgate_operator_' });
    // Gauges that prom-client names with a counter's `_total` (promtool rejects them); the same
    // figures stay, by type, in the *_active_handles and *_active_resources gauges.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(`tollgate_operator_${name}`);
  }
}
