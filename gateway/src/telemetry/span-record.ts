// One kept span as plain data, made in the export worker from a kept request's facts (trace-facts.ts)
// and replayed into its SDK (trace-export-worker.ts; docs/adr/0027, 0028).
import type { Attributes, HrTime, SpanKind, SpanStatusCode } from '@opentelemetry/api';

/**
 * A span as the worker replays it: its attributes as the gateway sets them (the worker's SDK checks
 * them and applies the span limits).
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

