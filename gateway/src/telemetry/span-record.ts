// What crosses from the main thread's tracer (recording-tracer.ts) to the export worker
// (span-forwarder.ts, trace-export-worker.ts): one kept span, as plain data (docs/adr/0027).
import type { Attributes, HrTime, SpanKind, SpanStatusCode } from '@opentelemetry/api';

/**
 * A span as the main thread records it and the worker replays it: data that survives structured
 * cloning, as set on the span (the worker's SDK checks it and applies the span limits).
 */
export interface SpanRecord {
  scope: { name: string; version?: string };
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  traceState?: string;
  parent?: SpanContextRecord;
  startTime: HrTime;
  endTime: HrTime;
  attributes: Attributes;
  events: Array<{ name: string; attributes?: Attributes; time: HrTime }>;
  links: Array<{ context: SpanContextRecord; attributes?: Attributes }>;
  status: { code: SpanStatusCode; message?: string };
}

export interface SpanContextRecord {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: string;
}

/** Where a kept span's record goes when the span ends (the forwarder). */
export interface SpanSink {
  add(record: SpanRecord): void;
}
