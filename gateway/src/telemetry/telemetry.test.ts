import { describe, expect, it } from 'vitest';
import type { Upstream } from '@tollgate/crds';
import { Snapshot } from '../resources/snapshot.ts';
import { attemptErrorTypeOf, errorTypeOf, identityOf, operationOf } from './genai.ts';
import { GatewayMetrics, type MetricsSources } from './metrics.ts';
import { wantsOpenMetrics } from './metrics-server.ts';
import { finishRequest, modelLabel, type RequestRecord } from './request-record.ts';
import { UsageLedger } from './usage-ledger.ts';

const upstream = (name: string, baseURL: string) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name }, spec: { baseURL, credentials: { env: 'X' } } }) as Upstream;
const snapshot = new Snapshot([
  upstream('azure', 'https://acme.openai.azure.com/openai/v1'),
  { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'gpt-4o' }, spec: { targets: [{ upstream: 'azure' }] } },
] as never);

const record = (extra: Partial<RequestRecord> = {}): RequestRecord => ({
  requestId: 'req_0123456789abcdef0123456789abcdef',
  traceId: null,
  method: 'POST',
  route: '/v1/chat/completions',
  status: 200,
  startedAt: 0,
  endedAt: 250,
  attempts: [],
  ...extra,
});

describe('GenAI label values', () => {
  it('names well-known providers by host, anything else _OTHER, and keeps server.address to the host', () => {
    expect(identityOf(upstream('a', 'https://api.openai.com/v1'))).toEqual({ provider: 'openai', address: 'api.openai.com', port: 443 });
    expect(identityOf(upstream('b', 'https://acme.openai.azure.com/openai/v1')).provider).toBe('azure.ai.openai');
    expect(identityOf(upstream('c', 'http://vllm.internal:8000/v1'))).toEqual({ provider: '_OTHER', address: 'vllm.internal', port: 8000 });
  });

  it('classifies errors: a known code as itself, an unknown one by status class, success as none', () => {
    expect(errorTypeOf(429, 'rate_limit_exceeded')).toBe('rate_limit_exceeded');
    expect(errorTypeOf(400, 'some upstream free text')).toBe('4xx');
    expect(errorTypeOf(502, undefined)).toBe('5xx');
    expect(errorTypeOf(200, undefined)).toBeNull();
    expect(attemptErrorTypeOf(undefined, 'UND_ERR_CONNECT_TIMEOUT')).toBe('connect_timeout');
    expect(attemptErrorTypeOf(undefined, 'EWHATEVER')).toBe('_OTHER');
    expect(attemptErrorTypeOf(503, undefined)).toBe('5xx');
    expect(attemptErrorTypeOf(200, undefined)).toBeNull();
    // Timeouts, whichever clock ran out (the exchange's abort reason timeout).
    expect(errorTypeOf(408, 'request_timeout')).toBe('request_timeout');
    expect(errorTypeOf(504, 'upstream_timeout')).toBe('upstream_timeout');
    expect(attemptErrorTypeOf(200, 'UND_ERR_TOTAL_TIMEOUT')).toBe('timeout');
    expect(attemptErrorTypeOf(200, 'UND_ERR_BODY_TIMEOUT')).toBe('timeout');
  });

  it('maps routes to operations, and model names to labels only when the snapshot knows them', () => {
    expect(operationOf('/v1/chat/completions')).toBe('chat');
    expect(operationOf('/v1/embeddings')).toBe('embeddings');
    expect(operationOf('/v1/files')).toBeNull();
    expect(modelLabel('gpt-4o', snapshot)).toBe('gpt-4o');
    expect(modelLabel('service-test', snapshot)).toBe('service-test');
    expect(modelLabel('gpt-4o-<script>-anything-a-client-writes', snapshot)).toBe('_OTHER');
    expect(modelLabel(undefined, snapshot)).toBe('');
  });

  it('finishes a fallback: the failed attempt by its own time, the answering one until the request ended', () => {
    const target = snapshot.upstreams.get('azure')!;
    const finished = finishRequest(
      record({
        model: 'gpt-4o',
        answeredBy: 'azure',
        attempts: [
          { upstream: 'other', error: 'ECONNREFUSED', startedAt: 10, ms: 5 },
          { upstream: 'azure', target, upstreamModel: 'gpt-4o-deploy', status: 200, startedAt: 50, ms: 20 },
        ],
      }),
      snapshot,
    );
    expect(finished.attempts.map((a) => [a.outcome, a.errorType, a.durationS, a.answered])).toEqual([
      ['failed', 'connection_refused', 0.005, false],
      ['success', null, 0.02, true],
    ]);
    expect(finished).toMatchObject({ provider: 'azure.ai.openai', operation: 'chat', model: 'gpt-4o', durationS: 0.25, errorType: null });
  });
});

describe('metrics', () => {
  const sources: MetricsSources = {
    inflight: () => [],
    snapshot: () => ({ generation: 1, counts: {} }),
    lastSyncAt: () => null,
    refusedObjects: () => 0,
    circuits: () => [],
  };

  it('gives at most the capped number of accounts their own series; the rest are other', async () => {
    const metrics = new GatewayMetrics(sources, { accountSeries: 2 });
    for (const account of ['a1', 'a2', 'a3', 'a4']) metrics.record(finishRequest(record({ account, usage: { inputTokens: 1, outputTokens: 1 } }), snapshot));
    const values = (await metrics.accountTokens.get()).values.filter((v) => v.labels.gen_ai_token_type === 'input');
    expect(values.map((v) => [v.labels.account, v.value])).toEqual([
      ['a1', 1],
      ['a2', 1],
      ['other', 2],
    ]);
  });

  it('leaves a long request id out of the exemplar rather than break the 128-character limit', async () => {
    const metrics = new GatewayMetrics(sources, { accountSeries: 0 });
    metrics.record(finishRequest(record({ requestId: `req_${'x'.repeat(120)}`, traceId: 'f'.repeat(32) }), snapshot));
    metrics.registry.setContentType('application/openmetrics-text; version=1.0.0; charset=utf-8');
    const text = await metrics.registry.metrics();
    expect(text).toContain(`# {trace_id="${'f'.repeat(32)}"}`);
    expect(text).not.toContain('x'.repeat(120));
  });

  it('takes no usage that is not a finite count (an upstream may send 1e400)', () => {
    const metrics = new GatewayMetrics(sources, { accountSeries: 1 });
    const finished = finishRequest(record({ account: 'a', usage: { inputTokens: JSON.parse('1e400'), outputTokens: 1 } }), snapshot);
    expect(finished.usage).toBeNull();
    expect(() => metrics.record(finished)).not.toThrow();
  });

  it('asks for OpenMetrics only when the scraper does', () => {
    expect(wantsOpenMetrics('application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')).toBe(true);
    expect(wantsOpenMetrics('text/plain;version=0.0.4')).toBe(false);
    expect(wantsOpenMetrics('application/openmetrics-text;q=0')).toBe(false);
    expect(wantsOpenMetrics(undefined)).toBe(false);
  });
});

describe('usage ledger', () => {
  it('counts answered requests, tokens and spend per account, key and model for the current month, and starts again in the next', async () => {
    let now = Date.UTC(2026, 10, 30, 23, 59);
    const ledger = new UsageLedger(() => now, 'gw-0', 'EUR');
    ledger.record({ account: 'acme', key: 'acme-ci', model: 'gpt-4o', usage: { inputTokens: 3, outputTokens: 4 }, cost: 1_500_000 });
    ledger.record({ account: 'acme', key: 'acme-web', usage: null, cost: 25 });
    expect(await ledger.report()).toEqual({
      replica: 'gw-0',
      scope: 'replica',
      month: '2026-11',
      currency: 'EUR',
      accounts: { acme: { inputTokens: 3, outputTokens: 4, requests: 2, spend: '1.500025' } },
      keys: { 'acme-ci': { account: 'acme', inputTokens: 3, outputTokens: 4, requests: 1, spend: '1.50' }, 'acme-web': { account: 'acme', inputTokens: 0, outputTokens: 0, requests: 1, spend: '0.000025' } },
      models: { 'gpt-4o': { inputTokens: 3, outputTokens: 4, requests: 1, spend: '1.50' } },
    });
    now = Date.UTC(2026, 11, 1, 0, 1);
    expect(await ledger.report()).toEqual({ replica: 'gw-0', scope: 'replica', month: '2026-12', currency: 'EUR', accounts: {}, keys: {}, models: {} });
    const cluster = async () => ({ accounts: { acme: { inputTokens: 10, outputTokens: 20, requests: 3, spendMicros: 7 } }, keys: {}, models: {} });
    expect(await ledger.report(cluster)).toMatchObject({ scope: 'cluster', month: '2026-12', accounts: { acme: { inputTokens: 10, spend: '0.000007' } } });
  });
});
