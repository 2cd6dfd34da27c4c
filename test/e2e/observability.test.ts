// Observability end to end: a real Prometheus scrapes a gateway (and the operator, against the fake
// API server) while the test drives JSON, stream,
// 401, 402, 429 and an upstream failure with fallback through it; then every PromQL expression of the
// shipped dashboard and alert rules is evaluated through Prometheus's HTTP API, exemplars are read
// back, promtool checks rules and metrics, and spans arrive at an OTLP/HTTP receiver (JSON here; the
// protobuf encoding and tracing off are in tracing.test.ts). One request id ties log, exemplar, span.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { exportTracesTo, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { PROMTOOL_BIN, startPrometheus, type RunningPrometheus } from '../helpers/prometheus.ts';
import { until } from '../helpers/proxy-tools.ts';
import { API as KUBE_API, manifests, startCluster, startOperatorProcess, type Cluster, type Proc } from '../helpers/cluster.ts';

const run = promisify(execFile);
const DASHBOARD = new URL('../../charts/tollgate/dashboards/tollgate.json', import.meta.url);
const RULES = new URL('../../charts/tollgate/alerts/tollgate.rules.yaml', import.meta.url);
const SECRET = 'sk-upstream-secret-observability-0123';
const PROMPT = 'a private prompt that must never reach a span';
process.env.TEST_UPSTREAM_KEY = SECRET;

const pro = newKey('pro-key', 'acme');
const free = newKey('free-key', 'hobby');
const limited = newKey('limited-key', 'tiny-co');
const ghost = newKey('ghost-key', 'nobody');

/** The dashboard's targets, with Grafana's variables replaced as "All" and a fixed rate interval. */
function dashboardExpressions(dashboard: any): Array<{ panel: string; expr: string }> {
  const out: Array<{ panel: string; expr: string }> = [];
  for (const panel of dashboard.panels) for (const target of panel.targets ?? []) out.push({ panel: panel.title, expr: target.expr });
  return out;
}
/** Shared-store (Redis) expressions need a gateway in shared mode: redis-observability.test.ts evaluates them. */
const SHARED_STORE = /tollgate_shared_store_/;
const grafana = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replace(/\$(namespace|pod|model)\b/g, '.*');

/** The rule's expression without its final threshold comparison: the signal that must exist. */
function signalOf(expr: string): string {
  const match = /^([\s\S]*?)\s*(>|<|>=|<=|==|!=)\s*[0-9.e]+\s*$/.exec(expr.trim());
  if (!match) throw new Error(`alert expression without a final threshold: ${expr}`);
  return match[1];
}

describe('metrics, exemplars, traces and logs against a real Prometheus and an OTLP receiver', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let c: FakeUpstream;
  let gw: TestGateway;
  let prom: RunningPrometheus;
  let otlp: OtlpReceiver;
  let cluster: Cluster;
  let operator: Proc;
  const ids: Record<string, string> = {};

  const send = {
    json: async () => {
      const { response } = await gw.client(pro.key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: PROMPT }] }).withResponse();
      return response.headers.get('x-service-request-id')!;
    },
    stream: async () => {
      const { data, response } = await gw.client(pro.key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: PROMPT }], stream: true }).withResponse();
      for await (const _ of data);
      return response.headers.get('x-service-request-id')!;
    },
    serviceTestStream: async () => {
      const stream = await gw.client(pro.key).chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hello' }], stream: true });
      for await (const _ of stream);
    },
    unauthorized: () => raw(gw, 'POST', '/v1/chat/completions', { key: ghost.key, body: { model: 'gpt-4o', messages: [] } }),
    paymentRequired: () => raw(gw, 'POST', '/v1/chat/completions', { key: free.key, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] } }),
    rateLimited: () => raw(gw, 'POST', '/v1/chat/completions', { key: limited.key, body: { model: 'service-test', messages: [{ role: 'user', content: 'x' }] } }),
    circuitOpen: () => raw(gw, 'POST', '/v1/chat/completions', { key: pro.key, body: { model: 'solo', messages: [{ role: 'user', content: 'x' }] } }),
  };

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    a = await startFakeUpstream('a');
    b = await startFakeUpstream('b');
    c = await startFakeUpstream('c');
    gw = await startTestGateway(
      [
        upstream('a', a.url),
        upstream('b', b.url),
        upstream('c', c.url),
        // Priced, under a spend budget: the spend series, panels and alert have something to show.
        {
          ...model('gpt-4o', [
            { upstream: 'a', model: 'fake-a', priority: 0 },
            { upstream: 'b', model: 'fake-b', priority: 1 },
          ]),
          spec: { targets: [{ upstream: 'a', model: 'fake-a', priority: 0 }, { upstream: 'b', model: 'fake-b', priority: 1 }], pricing: { inputPerMillion: '2.50', outputPerMillion: '10.00' } },
        },
        model('solo', [{ upstream: 'c' }]),
        { ...plan('pro', ['gpt-4o', 'solo']), spec: { models: ['gpt-4o', 'solo'], limits: { spendPerMonth: '100.00' } } },
        plan('tiny', ['solo'], { requestsPerMinute: 1 }),
        account('acme', 'pro'),
        account('hobby'),
        account('tiny-co', 'tiny'),
        apiKey(pro),
        apiKey(free),
        apiKey(limited),
      ],
      {
        logLevel: 'debug',
        breaker: { threshold: 1, cooldownMs: 10 * 60_000 },
        telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 2, tracing: { enabled: true, reason: 'test' } },
      },
    );
    // The operator, leading against the fake API server, with a few objects to reconcile.
    cluster = await startCluster('tollgate-test');
    operator = await startOperatorProcess(cluster);
    await cluster.kubectl(['apply', '-f', '-'], manifests(
      { apiVersion: KUBE_API, kind: 'Plan', metadata: { name: 'starter' }, spec: { models: [] } },
      { apiVersion: KUBE_API, kind: 'Account', metadata: { name: 'acme' }, spec: { plan: 'starter' } },
    ));
    await until(async () => (await cluster.get('account', 'acme'))?.status?.observedGeneration === 1, 'the operator to reconcile the Account');
    const address = new URL(gw.telemetry.metricsURL).host;
    prom = await startPrometheus(
      [
        { job: 'tollgate', address, labels: { namespace: 'tollgate-test', pod: 'tollgate-gateway-0' } },
        { job: 'tollgate-operator', address: `127.0.0.1:${operator.port}`, labels: { namespace: 'tollgate-test', pod: 'tollgate-operator-0' } },
      ],
      [RULES.pathname],
    );

    // Two rounds with a scrape in between, so that rates see the counters move.
    a.behave({ status: 500 });
    c.behave({ status: 503 });
    for (let round = 0; round < 2; round++) {
      await prom.scraped();
      ids[`json${round}`] = await send.json();
      ids[`stream${round}`] = await send.stream();
      await send.serviceTestStream();
      await send.unauthorized();
      await send.paymentRequired();
      await send.rateLimited();
      await send.rateLimited();
      await send.circuitOpen();
    }
    await prom.scraped();
  }, 120_000);

  afterAll(async () => {
    await prom?.stop();
    await operator?.stop();
    await cluster?.close();
    await gw?.stop();
    await Promise.all([a?.close(), b?.close(), c?.close(), otlp?.close()]);
  });

  it('evaluates every dashboard expression without error, each returning series', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8'));
    const expressions = dashboardExpressions(dashboard).filter(({ expr }) => !SHARED_STORE.test(expr));
    expect(expressions.length).toBeGreaterThan(20);
    expect(expressions.some(({ expr }) => expr.includes('tollgate_operator_'))).toBe(true);
    const empty: string[] = [];
    for (const { panel, expr } of expressions) {
      const series = await prom.query(grafana(expr));
      if (series.length === 0) empty.push(`${panel}: ${expr}`);
    }
    expect(empty).toEqual([]);
    // The template variables resolve to what was scraped.
    const variables = dashboard.templating.list.filter((v: any) => v.type === 'query');
    for (const variable of variables) {
      const [, selector, label] = /^label_values\((.*), (\w+)\)$/.exec(variable.query.query)!;
      const values = new Set((await prom.query(grafana(selector))).map((s) => s.metric[label]));
      expect(values.size, variable.name).toBeGreaterThan(0);
    }
  });

  it('loads every alert rule healthy; each signal has series, and the provoked alerts fire', async () => {
    await until(async () => (await prom.rules()).every((g) => g.rules.every((r) => r.health !== 'unknown')), 'a rule evaluation');
    const groups = await prom.rules();
    const rules = groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.name).sort()).toEqual([
      'TollgateAccountNearSpendBudget',
      'TollgateEventLoopDelayHigh',
      'TollgateHigh5xxRatio',
      'TollgateOperatorNoLeader',
      'TollgateOperatorReconcileErrors',
      'TollgateRefusedObjects',
      'TollgateResourceSyncStale',
      'TollgateSharedStoreDegraded',
      'TollgateSlowTimeToFirstToken',
      'TollgateUpstreamCircuitOpen',
    ]);
    for (const rule of rules) {
      if (SHARED_STORE.test(rule.query)) continue;
      expect({ rule: rule.name, health: rule.health, error: rule.lastError ?? '' }).toEqual({ rule: rule.name, health: 'ok', error: '' });
      expect((await prom.query(signalOf(rule.query))).length, `${rule.name}: ${signalOf(rule.query)}`).toBeGreaterThan(0);
    }
    // Upstreams a and c failed with a breaker threshold of 1, and 'solo' answered 503 twice.
    const open = await prom.query(rules.find((r) => r.name === 'TollgateUpstreamCircuitOpen')!.query);
    expect(open.map((s) => s.metric.upstream).sort()).toEqual(['a', 'c']);
    expect(await prom.query(rules.find((r) => r.name === 'TollgateHigh5xxRatio')!.query)).toHaveLength(1);
    // The operator leads and reconciles without errors: its alerts are quiet, their signals present.
    expect(await prom.query(rules.find((r) => r.name === 'TollgateOperatorNoLeader')!.query)).toEqual([]);
    expect(await prom.query(rules.find((r) => r.name === 'TollgateOperatorReconcileErrors')!.query)).toEqual([]);
    const reconciled = await prom.query('sum by (kind) (tollgate_operator_reconciles_total{namespace="tollgate-test", result=~"written|unchanged"})');
    expect(reconciled.map((s) => s.metric.kind).sort()).toEqual(expect.arrayContaining(['Account', 'Plan']));
  });

  it('passes promtool check rules and check metrics', async () => {
    const rules = await run(PROMTOOL_BIN, ['check', 'rules', RULES.pathname]);
    expect(rules.stdout).toContain('SUCCESS: 10 rules found');
    for (const url of [`${gw.telemetry.metricsURL}/metrics`, `http://127.0.0.1:${operator.port}/metrics`]) {
      const text = await (await fetch(url)).text();
      const child = execFile(PROMTOOL_BIN, ['check', 'metrics']);
      const result = new Promise<{ code: number | null; output: string }>((resolve) => {
        let output = '';
        child.stdout!.on('data', (d) => (output += d));
        child.stderr!.on('data', (d) => (output += d));
        child.once('exit', (code) => resolve({ code, output }));
      });
      child.stdin!.end(text);
      expect({ url, ...(await result) }).toEqual({ url, code: 0, output: '' });
    }
  });

  it('names the series as the GenAI conventions do, with bounded labels and no secret', async () => {
    const text = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    for (const name of [
      'gen_ai_server_request_duration_seconds_bucket',
      'gen_ai_server_time_to_first_token_seconds_bucket',
      'gen_ai_server_time_per_output_token_seconds_bucket',
      'gen_ai_client_operation_duration_seconds_bucket',
      'gen_ai_client_token_usage_bucket',
    ])
      expect(text).toContain(`${name}{`);
    expect(text).not.toContain('gen_ai_system');
    expect(text).toContain('le="81.92"');
    expect(text).toContain('le="67108864"');
    // The fallback: a 500 from a is error_type 5xx on the client side; b answered.
    expect(text).toMatch(/gen_ai_client_operation_duration_seconds_count\{[^}]*gen_ai_request_model="fake-a"[^}]*error_type="5xx"[^}]*\} 1/);
    expect(text).toMatch(/tollgate_upstream_fallbacks_total\{upstream="a"\} 1/);
    expect(text).toMatch(/tollgate_rate_limit_rejections_total\{limit="requests"\} 3/);
    expect(text).toMatch(/tollgate_auth_failures_total\{reason="unknown"\} 2/);
    expect(text).toMatch(/tollgate_payment_required_total\{gen_ai_request_model="gpt-4o"\} 2/);
    expect(text).toMatch(/tollgate_account_tokens_total\{account="acme",gen_ai_token_type="input"\}/);
    for (const forbidden of [SECRET, pro.key, free.key, ids.json0]) expect(text).not.toContain(forbidden);
  });

  it('stores exemplars carrying the request id and the trace id', async () => {
    const found = await prom.exemplars('gen_ai_server_request_duration_seconds_bucket');
    const labels = found.flatMap((s) => s.exemplars.map((e) => e.labels));
    expect(labels.length).toBeGreaterThan(0);
    for (const exemplar of labels) {
      expect(exemplar.request_id).toMatch(/^req_[0-9a-f]{32}$/);
      expect(exemplar.trace_id).toMatch(/^[0-9a-f]{32}$/);
    }
  });

  it('exports one trace per request: the server span with the request id, one client span per attempt, two for a fallback', async () => {
    await until(() => spansOf(otlp.spans, ids.json0).length >= 3, 'the spans of the fallback request');
    const spans = spansOf(otlp.spans, ids.json0);
    const server = spans.find((s) => s.kind === 2)!;
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    expect(server.name).toBe('chat gpt-4o');
    expect(server.attributes).toMatchObject({
      'tollgate.request_id': ids.json0,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-4o',
      'http.response.status_code': 200,
      'http.route': '/v1/chat/completions',
    });
    expect(server.events.map((e) => e.name)).toContain('tollgate.fallback');
    const clients = spans.filter((s) => s.kind === 3);
    expect(clients.map((s) => s.attributes['tollgate.upstream'])).toEqual(['a', 'b']);
    for (const client of clients) expect(client.parentSpanId).toBe(server.spanId);
    expect(clients[0].attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500', 'gen_ai.request.model': 'fake-a', 'server.address': '127.0.0.1' });
    expect(clients[1].attributes).toMatchObject({ 'http.response.status_code': 200, 'gen_ai.request.model': 'fake-b', 'gen_ai.usage.input_tokens': expect.any(Number) });
    // The second round found a's circuit open: one client span, and the decision as an event.
    await until(() => spansOf(otlp.spans, ids.json1).length >= 2, 'the spans of the second request');
    const later = spansOf(otlp.spans, ids.json1);
    expect(later.filter((s) => s.kind === 3)).toHaveLength(1);
    expect(later.find((s) => s.kind === 2)!.events.map((e) => e.name)).toContain('tollgate.circuit_open');
    // The upstream got the client span as its parent.
    const sent = b.requests.find((r) => r.headers['x-service-request-id'] === ids.json0)!;
    expect(sent.headers.traceparent).toBe(`00-${clients[1].traceId}-${clients[1].spanId}-01`);
    // Never the prompt, never the credential.
    const everything = JSON.stringify(otlp.spans);
    expect(everything).not.toContain(PROMPT);
    expect(everything).not.toContain(SECRET);
  });

  it('one request id ties the access line, the exemplar and the span together; one debug line per attempt', async () => {
    const requestId = ids.json0;
    const access = gw.logs.find((l) => l.requestId === requestId && l.route === '/v1/chat/completions' && 'status' in l && !('attempt' in l))!;
    expect(access.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(access.span_id).toMatch(/^[0-9a-f]{16}$/);
    const span = spansOf(otlp.spans, requestId).find((s) => s.kind === 2)!;
    expect({ traceId: span.traceId, spanId: span.spanId }).toEqual({ traceId: access.trace_id, spanId: access.span_id });
    // The exemplar kept in Prometheus for this request (a bucket keeps the latest of its requests).
    const exemplars = (await prom.exemplars('{__name__=~"gen_ai_.*_bucket"}')).flatMap((s) => s.exemplars.map((e) => e.labels));
    const traced = exemplars.filter((e) => e.trace_id === access.trace_id);
    expect(traced.length).toBeGreaterThan(0);
    for (const exemplar of traced) expect(exemplar.request_id).toBe(requestId);
    const attempts = gw.logs.filter((l) => l.requestId === requestId && l.msg === 'upstream attempt');
    expect(attempts.map((l) => [l.upstream, l.outcome, l.trace_id])).toEqual([
      ['a', 'server_error', access.trace_id],
      ['b', 'success', access.trace_id],
    ]);
  });

  it('GET /usage answers this replica\'s monthly usage per account', async () => {
    const response = await fetch(`${gw.telemetry.metricsURL}/usage`);
    expect(response.headers.get('content-type')).toBe('application/json');
    const usage = await response.json();
    expect(usage).toMatchObject({ scope: 'replica', month: new Date().toISOString().slice(0, 7), replica: expect.any(String) });
    // acme: 2 JSON + 2 streams + 2 service-test streams answered; its 503s are not usage, nor are refusals.
    expect(usage.accounts.acme.requests).toBe(6);
    expect(usage.accounts.acme.inputTokens).toBeGreaterThan(0);
    expect(usage.accounts.acme.outputTokens).toBeGreaterThan(0);
    expect(usage.accounts['tiny-co']).toMatchObject({ requests: 1 });
    expect(usage.accounts.hobby).toBeUndefined();
  });
});

function spansOf(spans: ReceivedSpan[], requestId: string): ReceivedSpan[] {
  const server = spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId);
  return server ? spans.filter((s) => s.traceId === server.traceId) : [];
}
