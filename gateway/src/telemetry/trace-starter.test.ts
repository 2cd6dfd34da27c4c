import { createTraceState, ROOT_CONTEXT, SamplingDecision, SpanKind, trace, TraceFlags, type Sampler } from '@opentelemetry/api';
import { hrTime } from '@opentelemetry/core';
import { AlwaysOnSampler, RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { propagatesW3CTraceContextOnly, samplerFrom } from './trace-config.ts';
import { TraceStarter } from './trace-starter.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

const starterWith = (sampler: Sampler) => new TraceStarter({ sampler, ids: new RandomIdGenerator(), now: () => hrTime() });

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

describe('TraceStarter: the SDK tracer\'s decision, without a span', () => {
  it('continues a sampled parent: its trace, its trace state, a new span id, the parent as a record', () => {
    const starter = starterWith(new AlwaysOnSampler());
    const start = starter.start('POST', SpanKind.SERVER, remoteParent(TraceFlags.SAMPLED));
    expect(start.kept).toBe(true);
    expect(start.context).toMatchObject({ traceId: TRACE, traceFlags: TraceFlags.SAMPLED });
    expect(start.context.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(start.context.spanId).not.toBe(PARENT);
    expect(start.context.traceState?.serialize()).toBe('vendor=1');
    expect(start.parent).toEqual({ traceId: TRACE, spanId: PARENT, traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: 'vendor=1' });
  });

  it('starts a new trace without a valid parent', () => {
    const start = starterWith(new AlwaysOnSampler()).start('root', SpanKind.SERVER, ROOT_CONTEXT);
    expect(start.context.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(start.context.traceId).not.toBe(TRACE);
    expect(start.parent).toBeUndefined();
  });

  it('gives the sampler what the SDK tracer gives it: the parent context, the trace id, the name and the kind', () => {
    const calls: unknown[][] = [];
    const starter = starterWith({ shouldSample: (...args: unknown[]) => (calls.push(args), { decision: SamplingDecision.NOT_RECORD }) } as Sampler);
    const parent = remoteParent(TraceFlags.SAMPLED);
    starter.start('POST', SpanKind.SERVER, parent);
    expect(calls).toEqual([[parent, TRACE, 'POST', SpanKind.SERVER, {}, []]]);
  });

  it('keeps an unsampled parent\'s decision: nothing kept, the same trace, its trace state', () => {
    const starter = starterWith(new (class implements Sampler {
      shouldSample(context: Parameters<Sampler['shouldSample']>[0]) {
        const parent = trace.getSpanContext(context);
        return { decision: parent && !(parent.traceFlags & TraceFlags.SAMPLED) ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED };
      }
    })());
    const start = starter.start('POST', SpanKind.SERVER, remoteParent(TraceFlags.NONE));
    expect(start.kept).toBe(false);
    expect(start.context).toMatchObject({ traceId: TRACE, traceFlags: TraceFlags.NONE });
    expect(start.context.spanId).not.toBe(PARENT);
    expect(start.context.traceState?.serialize()).toBe('vendor=1');
    expect(start.parent).toBeUndefined();
  });

  it('keeps nothing for a sampler\'s RECORD (record, do not sample): such a span is never exported', () => {
    const start = starterWith({ shouldSample: () => ({ decision: SamplingDecision.RECORD }) }).start('recorded', SpanKind.SERVER, ROOT_CONTEXT);
    expect(start.kept).toBe(false);
    expect(start.context.traceFlags).toBe(TraceFlags.NONE);
  });

  it('keeps the attributes and trace state a sampler gives', () => {
    const start = starterWith({ shouldSample: () => ({ decision: SamplingDecision.RECORD_AND_SAMPLED, attributes: { 'sampler.rule': 'r1' }, traceState: createTraceState('s=2') }) }).start('x', SpanKind.SERVER, ROOT_CONTEXT);
    expect(start.kept).toBe(true);
    expect(start.samplerAttributes).toEqual({ 'sampler.rule': 'r1' });
    expect(start.context.traceState?.serialize()).toBe('s=2');
  });

  it('makes span ids for a kept trace\'s attempts, and tells the time as the SDK does', () => {
    const starter = starterWith(new AlwaysOnSampler());
    const ids = new Set([starter.spanId(), starter.spanId()]);
    expect([...ids]).toEqual([expect.stringMatching(/^[0-9a-f]{16}$/), expect.stringMatching(/^[0-9a-f]{16}$/)]);
    const [seconds, nanos] = starter.now();
    expect(Math.abs(seconds * 1000 + nanos / 1e6 - Date.now())).toBeLessThan(60_000);
  });
});
