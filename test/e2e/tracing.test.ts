// Tracing beyond the observability suite: the OTLP/HTTP protobuf encoding, an incoming W3C
// traceparent continued (and its sampling decision kept under a parent-based sampler), and a gateway
// with tracing off: no SDK, no trace ids in the log, the caller's traceparent still passed upstream.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { clearOtelEnv, exportTracesTo, startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.ts';
import { until } from '../helpers/proxy-tools.ts';
import { tracingConfigFrom } from '../../gateway/src/telemetry/tracing.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret-tracing';
const key = newKey('k', 'acme');
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

const manifests = (up: FakeUpstream) => [upstream('up', up.url), model('gpt-4o', [{ upstream: 'up', model: 'fake' }]), plan('pro', ['gpt-4o']), account('acme', 'pro'), apiKey(key)];
/** A gateway tracing as `env` says (the OTEL_* variables of the moment by default). */
const gatewayTracing = (up: FakeUpstream, env: NodeJS.ProcessEnv = process.env) => startTestGateway(manifests(up), { telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: tracingConfigFrom(env) } });
const chat = (gw: TestGateway, headers: Record<string, string> = {}) =>
  raw(gw, 'POST', '/v1/chat/completions', { key: key.key, headers, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });

describe('tracing exported as OTLP/HTTP protobuf, with W3C trace context', () => {
  let up: FakeUpstream;
  let gw: TestGateway;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/protobuf';
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    process.env.OTEL_NODE_RESOURCE_DETECTORS = 'none';
    process.env.OTEL_SERVICE_NAME = 'tollgate-under-test';
    // What docs/operations.md recommends: 10% of new traces, and whatever the caller decided.
    process.env.OTEL_TRACES_SAMPLER = 'parentbased_traceidratio';
    process.env.OTEL_TRACES_SAMPLER_ARG = '0.1';
    up = await startFakeUpstream('up');
    gw = await gatewayTracing(up);
  });
  afterAll(async () => {
    await gw.stop();
    await up.close();
    await otlp.close();
    clearOtelEnv();
  });

  it('continues a sampled caller trace: same trace id, the caller span as parent, the client span propagated upstream', async () => {
    const answer = await chat(gw, { traceparent: `00-${TRACE}-${PARENT}-01` });
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-service-request-id')!;
    await until(() => otlp.spans.filter((s) => s.traceId === TRACE).length >= 2, 'the spans of the traced request');
    expect(otlp.contentTypes.every((t) => t === 'application/x-protobuf')).toBe(true);
    const spans = otlp.spans.filter((s) => s.traceId === TRACE);
    const server = spans.find((s) => s.kind === 2)!;
    const client = spans.find((s) => s.kind === 3)!;
    expect(server.parentSpanId).toBe(PARENT);
    expect(server.attributes['tollgate.request_id']).toBe(requestId);
    expect(server.resource['service.name']).toBe('tollgate-under-test');
    expect(client.parentSpanId).toBe(server.spanId);
    expect(up.requests.at(-1)!.headers.traceparent).toBe(`00-${TRACE}-${client.spanId}-01`);
    const line = gw.logs.find((l) => l.requestId === requestId)!;
    expect([line.trace_id, line.span_id]).toEqual([TRACE, server.spanId]);
  });

  it('keeps a caller\'s decision not to sample: nothing exported, the trace id still logged and propagated unsampled', async () => {
    const unsampled = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const answer = await chat(gw, { traceparent: `00-${unsampled}-${PARENT}-00` });
    const requestId = answer.headers.get('x-service-request-id')!;
    // A later sampled request's spans arriving means the batch with the unsampled one would have too.
    await chat(gw, { traceparent: `00-${'b'.repeat(32)}-${PARENT}-01` });
    await until(() => otlp.spans.some((s) => s.traceId === 'b'.repeat(32)), 'the next sampled trace');
    expect(otlp.spans.filter((s) => s.traceId === unsampled)).toEqual([]);
    expect(gw.logs.find((l) => l.requestId === requestId)!.trace_id).toBe(unsampled);
    expect(up.requests.find((r) => r.headers['x-service-request-id'] === requestId)!.headers.traceparent).toMatch(new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
  });
});

describe('tracing off (OTEL_SDK_DISABLED=true, or no exporter configured)', () => {
  let up: FakeUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    up = await startFakeUpstream('up');
  });
  afterEach(async () => {
    await gw?.stop();
  });
  afterAll(async () => {
    await up.close();
  });

  it('decides from the standard variables', () => {
    expect(tracingConfigFrom({}).enabled).toBe(false);
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).enabled).toBe(true);
    expect(tracingConfigFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).enabled).toBe(true);
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'console' }).enabled).toBe(true);
    expect(tracingConfigFrom({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).enabled).toBe(false);
    expect(tracingConfigFrom({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).enabled).toBe(false);
  });

  it('logs no trace ids, and passes the caller\'s traceparent and tracestate through unchanged', async () => {
    gw = await gatewayTracing(up, { OTEL_SDK_DISABLED: 'true' });
    expect(gw.telemetry.tracingOn).toBe(false);
    const traceparent = `00-${TRACE}-${PARENT}-01`;
    const answer = await chat(gw, { traceparent, tracestate: 'vendor=1' });
    const requestId = answer.headers.get('x-service-request-id')!;
    const sent = up.requests.find((r) => r.headers['x-service-request-id'] === requestId)!;
    expect([sent.headers.traceparent, sent.headers.tracestate]).toEqual([traceparent, 'vendor=1']);
    const line = gw.logs.find((l) => l.requestId === requestId)!;
    expect(line).not.toHaveProperty('trace_id');
    expect(line).not.toHaveProperty('span_id');
  });
});

describe('trace export from its worker thread (docs/adr/0026)', () => {
  let up: FakeUpstream;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    up = await startFakeUpstream('up');
    otlp = await startOtlpReceiver();
  });
  beforeEach(() => exportTracesTo(otlp));
  afterEach(() => clearOtelEnv());
  afterAll(async () => {
    await up.close();
    await otlp.close();
  });

  it('holds spans for the batch delay the variables set, and exports them all when the gateway stops', async () => {
    // Longer than the test: nothing leaves before the stop, which must export what was recorded.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
    const gw = await gatewayTracing(up);
    const traces = ['1', '2', '3'].map((digit) => digit.repeat(32));
    for (const trace of traces) expect((await chat(gw, { traceparent: `00-${trace}-${PARENT}-01` })).status).toBe(200);
    expect(otlp.spans.filter((s) => traces.includes(s.traceId))).toEqual([]);
    await gw.stop();
    expect(gw.logs.filter((l) => String(l.msg).includes('trace export'))).toEqual([]);
    for (const trace of traces) {
      const spans = otlp.spans.filter((s) => s.traceId === trace);
      expect(spans.map((s) => s.kind).sort()).toEqual([2, 3]);
      const server = spans.find((s) => s.kind === 2)!;
      expect(server.parentSpanId).toBe(PARENT);
      expect(server.name).toBe('chat gpt-4o');
      expect(server.resource['service.name']).toBe('tollgate-gateway');
      expect(spans.find((s) => s.kind === 3)!.parentSpanId).toBe(server.spanId);
    }
  });

  it('applies the span limits the variables set: attributes past the count dropped and counted, values cut to the length', async () => {
    process.env.OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT = '3';
    process.env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT = '8';
    const gw = await gatewayTracing(up);
    try {
      const trace = '7'.repeat(32);
      expect((await chat(gw, { traceparent: `00-${trace}-${PARENT}-01` })).status).toBe(200);
      await until(() => otlp.spans.filter((s) => s.traceId === trace).length === 2, 'both spans of the trace');
      for (const span of otlp.spans.filter((s) => s.traceId === trace)) {
        expect(Object.keys(span.attributes)).toHaveLength(3);
        expect(span.droppedAttributesCount).toBeGreaterThan(0);
        for (const value of Object.values(span.attributes)) if (typeof value === 'string') expect(value.length).toBeLessThanOrEqual(8);
      }
      const server = otlp.spans.find((s) => s.traceId === trace && s.kind === 2)!;
      // The first three set, in order: the method, the path cut to eight characters, the request id cut.
      expect(server.attributes).toEqual({ 'http.request.method': 'POST', 'url.path': '/v1/chat', 'tollgate.request_id': expect.stringMatching(/^.{8}$/) });
    } finally {
      await gw.stop();
    }
  });

  it('bounds the spans held by OTEL_BSP_MAX_QUEUE_SIZE: drops a request\'s spans that do not fit, says so in the log, and goes on serving and exporting', async () => {
    // One span held at most: a proxied chat makes two (its server span and its attempt's client
    // span), so its trace never fits and is dropped whole; a model list makes one, and fits.
    process.env.OTEL_BSP_MAX_QUEUE_SIZE = '1';
    const gw = await gatewayTracing(up);
    try {
      const chats = ['4', '5'].map((digit) => digit.repeat(32));
      const lists = ['8', '9'].map((digit) => digit.repeat(32));
      for (let i = 0; i < 2; i++) {
        expect((await chat(gw, { traceparent: `00-${chats[i]}-${PARENT}-01` })).status).toBe(200);
        const listed = await raw(gw, 'GET', '/v1/models', { key: key.key, headers: { traceparent: `00-${lists[i]}-${PARENT}-01` } });
        expect(listed.status).toBe(200);
        // Each list once exported: the worker has taken its span by then, and the queue is free again.
        await until(() => otlp.spans.some((s) => s.traceId === lists[i]), `the span of trace ${lists[i]}`);
      }
      for (const trace of lists) expect(otlp.spans.filter((s) => s.traceId === trace).map((s) => s.kind)).toEqual([2]);
      for (const trace of chats) expect(otlp.spans.filter((s) => s.traceId === trace)).toEqual([]);
      // Said once, not once per request.
      expect(gw.logs.filter((l) => l.msg === 'trace export is behind: spans dropped')).toEqual([expect.objectContaining({ dropped: 2, maxQueueSize: 1 })]);
    } finally {
      await gw.stop();
    }
  });
});

describe('propagators named by OTEL_PROPAGATORS', () => {
  let up: FakeUpstream;
  let otlp: OtlpReceiver;
  let gw: TestGateway;

  beforeAll(async () => {
    up = await startFakeUpstream('up');
    otlp = await startOtlpReceiver();
    exportTracesTo(otlp);
    process.env.OTEL_PROPAGATORS = 'b3multi';
    // Nothing sampled of its own: a trace is kept only because the caller's B3 headers say so.
    process.env.OTEL_TRACES_SAMPLER = 'parentbased_traceidratio';
    process.env.OTEL_TRACES_SAMPLER_ARG = '0';
    gw = await gatewayTracing(up);
  });
  afterAll(async () => {
    await gw.stop();
    await up.close();
    await otlp.close();
    clearOtelEnv();
  });

  it('b3multi: the caller\'s X-B3 headers continue the trace and go upstream as X-B3 headers of the attempt', async () => {
    const trace = 'c'.repeat(32);
    const answer = await chat(gw, { 'x-b3-traceid': trace, 'x-b3-spanid': PARENT, 'x-b3-sampled': '1' });
    expect(answer.status).toBe(200);
    await until(() => otlp.spans.filter((s) => s.traceId === trace).length >= 2, 'the spans of the B3 trace');
    const server = otlp.spans.find((s) => s.traceId === trace && s.kind === 2)!;
    const client = otlp.spans.find((s) => s.traceId === trace && s.kind === 3)!;
    expect(server.parentSpanId).toBe(PARENT);
    const sent = up.requests.find((r) => r.headers['x-service-request-id'] === answer.headers.get('x-service-request-id'))!;
    expect([sent.headers['x-b3-traceid'], sent.headers['x-b3-spanid'], sent.headers['x-b3-sampled']]).toEqual([trace, client.spanId, '1']);
  });

  it('b3multi: a trace that is not sampled goes upstream as X-B3 headers too, marked unsampled, and never as a W3C traceparent', async () => {
    const answer = await chat(gw);
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-service-request-id');
    const access = gw.logs.find((l) => l.requestId === requestId && l.status === 200 && typeof l.trace_id === 'string')!;
    const sent = up.requests.find((r) => r.headers['x-service-request-id'] === requestId)!;
    expect([sent.headers['x-b3-traceid'], sent.headers['x-b3-spanid'], sent.headers['x-b3-sampled']]).toEqual([access.trace_id, access.span_id, '0']);
    expect(sent.headers.traceparent).toBeUndefined();
  });
});
