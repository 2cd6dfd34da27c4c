import { createTraceState, ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, trace, TraceFlags, type Sampler } from '@opentelemetry/api';
import { hrTime, isTimeInput, timeInputToHrTime } from '@opentelemetry/core';
import { AlwaysOnSampler, RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { RecordingTracer } from './recording-tracer.ts';
import type { SpanRecord } from './span-record.ts';
import { propagatesW3CTraceContextOnly, samplerFrom } from './trace-config.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function tracerWith(sampler: Sampler) {
  const records: SpanRecord[] = [];
  const tracer = new RecordingTracer({
    sampler,
    ids: new RandomIdGenerator(),
    sink: { add: (record) => records.push(record) },
    clock: { now: () => hrTime(), toHrTime: timeInputToHrTime, isTimeInput },
    scope: { name: 'tollgate-gateway', version: '1.2.3' },
  });
  return { tracer, records };
}

const remoteParent = (flags: number) =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: PARENT, traceFlags: flags, isRemote: true, traceState: createTraceState('vendor=1') });

describe('samplerFrom: OTEL_TRACES_SAMPLER as the SDK reads it', () => {
  const sampler = async (env: NodeJS.ProcessEnv) => {
    const warnings: string[] = [];
    const chosen = await samplerFrom(env, (message) => warnings.push(message));
    return { name: chosen.toString(), warnings };
  };

  it('builds the SDK sampler each name stands for', async () => {
    expect((await sampler({})).name).toBe('ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}');
    expect((await sampler({ OTEL_TRACES_SAMPLER: 'always_off' })).name).toBe('AlwaysOffSampler');
    expect((await sampler({ OTEL_TRACES_SAMPLER: 'always_on' })).name).toBe('AlwaysOnSampler');
    expect((await sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).name).toBe('TraceIdRatioBased{0.25}');
    expect((await sampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })).name).toMatch(/^ParentBased\{root=TraceIdRatioBased\{0.1\}/);
    expect((await sampler({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).name).toMatch(/^ParentBased\{root=AlwaysOffSampler/);
  });

  it('says so, and falls back as the SDK does, for a name or ratio it cannot use', async () => {
    const unknown = await sampler({ OTEL_TRACES_SAMPLER: 'jaeger_remote' });
    expect(unknown.name).toMatch(/^ParentBased\{root=AlwaysOnSampler/);
    expect(unknown.warnings).toEqual([expect.stringContaining('"jaeger_remote"')]);
    for (const arg of [undefined, 'x', '1.5', '-1']) {
      const bad = await sampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg });
      expect(bad.name).toBe('TraceIdRatioBased{1}');
      expect(bad.warnings).toHaveLength(1);
    }
  });
});

describe('propagatesW3CTraceContextOnly: whether an unsampled request\'s traceparent may be written by hand', () => {
  it.each([
    [undefined, true],
    ['tracecontext', true],
    ['tracecontext,baggage', true],
    [' baggage , tracecontext ', true],
    ['baggage', false],
    ['b3', false],
    ['tracecontext,b3multi', false],
    ['jaeger', false],
    ['none', false],
  ])('OTEL_PROPAGATORS=%s: %s', (value, expected) => {
    expect(propagatesW3CTraceContextOnly(value === undefined ? {} : { OTEL_PROPAGATORS: value })).toBe(expected);
  });
});

describe('RecordingTracer', () => {
  it('continues a sampled parent: its trace, its trace state, the parent in the record, sent to the sink once ended', () => {
    const { tracer, records } = tracerWith(new AlwaysOnSampler());
    const span = tracer.startSpan('POST', { kind: SpanKind.SERVER, attributes: { a: 1 } }, remoteParent(TraceFlags.SAMPLED));
    const context = span.spanContext();
    expect(context).toMatchObject({ traceId: TRACE, traceFlags: TraceFlags.SAMPLED });
    expect(context.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.isRecording()).toBe(true);
    expect(records).toEqual([]);
    span.end();
    expect(span.isRecording()).toBe(false);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      scope: { name: 'tollgate-gateway', version: '1.2.3' },
      name: 'POST',
      kind: SpanKind.SERVER,
      traceId: TRACE,
      spanId: context.spanId,
      traceState: 'vendor=1',
      parent: { traceId: TRACE, spanId: PARENT, traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: 'vendor=1' },
      attributes: { a: 1 },
    });
  });

  it('starts a new trace without a valid parent', () => {
    const { tracer, records } = tracerWith(new AlwaysOnSampler());
    tracer.startSpan('root', {}, ROOT_CONTEXT).end();
    expect(records[0].traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(records[0].traceId).not.toBe(TRACE);
    expect(records[0].parent).toBeUndefined();
  });

  it('records what is set until the span ends, as the SDK span takes it, and nothing after', () => {
    const { tracer, records } = tracerWith(new AlwaysOnSampler());
    const span = tracer.startSpan('first', { kind: SpanKind.CLIENT, startTime: [100, 5] }, ROOT_CONTEXT);
    span.setAttributes({ kept: 'yes', none: undefined, empty: null as unknown as string, list: ['stop'] });
    span.setAttribute('n', 2);
    span.updateName('second');
    span.addEvent('plain', { x: 1 });
    span.addEvent('timed', [200, 0]);
    span.addEvent('both', { y: 2 }, [300, 0]);
    span.recordException(Object.assign(new Error('it broke'), { code: 'E_BROKE' }), [400, 0]);
    span.setStatus({ code: SpanStatusCode.UNSET });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream 503' });
    span.end([500, 0]);
    span.setAttribute('late', 1);
    span.addEvent('late');
    span.setStatus({ code: SpanStatusCode.OK });
    span.updateName('late');
    span.end([600, 0]);
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({ name: 'second', kind: SpanKind.CLIENT, startTime: [100, 5], endTime: [500, 0], status: { code: SpanStatusCode.ERROR, message: 'upstream 503' } });
    expect(record.attributes).toEqual({ kept: 'yes', list: ['stop'], n: 2 });
    expect(record.events.map((e) => [e.name, e.attributes, e.time])).toEqual([
      ['plain', { x: 1 }, expect.any(Array)],
      ['timed', undefined, [200, 0]],
      ['both', { y: 2 }, [300, 0]],
      ['exception', { 'exception.type': 'E_BROKE', 'exception.message': 'it broke', 'exception.stacktrace': expect.stringContaining('it broke') }, [400, 0]],
    ]);
  });

  it('keeps an OK status final, as the SDK span does', () => {
    const { tracer, records } = tracerWith(new AlwaysOnSampler());
    const span = tracer.startSpan('ok', {}, ROOT_CONTEXT);
    span.setStatus({ code: SpanStatusCode.OK, message: 'dropped: only an error has a message' });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'too late' });
    span.end();
    expect(records[0].status).toEqual({ code: SpanStatusCode.OK });
  });

  it('keeps an unsampled parent\'s decision: a span that records nothing, in the same trace, with its trace state', () => {
    const { tracer, records } = tracerWith(new (class implements Sampler {
      shouldSample(context: Parameters<Sampler['shouldSample']>[0]) {
        const parent = trace.getSpanContext(context);
        return { decision: parent && !(parent.traceFlags & TraceFlags.SAMPLED) ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED };
      }
    })());
    const span = tracer.startSpan('POST', { kind: SpanKind.SERVER }, remoteParent(TraceFlags.NONE));
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toMatchObject({ traceId: TRACE, traceFlags: TraceFlags.NONE });
    expect(span.spanContext().spanId).not.toBe(PARENT);
    expect(span.spanContext().traceState?.serialize()).toBe('vendor=1');
    span.setAttribute('a', 1);
    span.end();
    expect(records).toEqual([]);
  });

  it('records, but does not export, a span its sampler says to record and not sample', () => {
    const { tracer, records } = tracerWith({ shouldSample: () => ({ decision: SamplingDecision.RECORD }) });
    const span = tracer.startSpan('recorded', {}, ROOT_CONTEXT);
    expect(span.isRecording()).toBe(true);
    expect(span.spanContext().traceFlags).toBe(TraceFlags.NONE);
    span.end();
    expect(records).toEqual([]);
  });

  it('adds the attributes and trace state a sampler gives', () => {
    const { tracer, records } = tracerWith({ shouldSample: () => ({ decision: SamplingDecision.RECORD_AND_SAMPLED, attributes: { 'sampler.rule': 'r1' }, traceState: createTraceState('s=2') }) });
    const span = tracer.startSpan('x', { attributes: { own: true } }, ROOT_CONTEXT);
    span.end();
    expect(records[0].attributes).toEqual({ own: true, 'sampler.rule': 'r1' });
    expect(records[0].traceState).toBe('s=2');
  });
});
