// An OTLP/HTTP trace receiver for tests: a real HTTP server on port 0 that accepts POST /v1/traces
// in either encoding the exporter may use (http/json, http/protobuf) and keeps the spans it got.
// Protobuf is decoded with the few fields of opentelemetry/proto/trace/v1 that tests assert on.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 2 server, 3 client (SpanKind in the OTLP enum). */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** Attributes the span limits left out (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT). */
  droppedAttributesCount: number;
  events: Array<{ name: string; attributes: Record<string, AttributeValue> }>;
  resource: Record<string, AttributeValue>;
}

/** A scalar, or an array of them (gen_ai.response.finish_reasons). */
export type AttributeValue = string | number | boolean | Array<string | number | boolean>;

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the export requests received. */
  contentTypes: string[];
  close(): Promise<void>;
}

/**
 * Points the SDK's standard variables at `receiver` (its traces path), exporting every 50 ms so that
 * a test waits on spans rather than on the 5 s default batch delay, with no resource detectors.
 */
export function exportTracesTo(receiver: OtlpReceiver, protocol: 'http/json' | 'http/protobuf' = 'http/json'): void {
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${receiver.url}/v1/traces`;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = protocol;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
  process.env.OTEL_NODE_RESOURCE_DETECTORS = 'none';
}

/** Removes every OTEL_* variable, so that the next suite in this process starts from none. */
export function clearOtelEnv(): void {
  for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      if (req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      try {
        if (type.includes('json')) spans.push(...fromJson(JSON.parse(body.toString('utf8'))));
        else spans.push(...fromProtobuf(body));
      } catch (error) {
        res.writeHead(400).end(String(error));
        return;
      }
      const protobuf = !type.includes('json');
      res.writeHead(200, { 'content-type': protobuf ? 'application/x-protobuf' : 'application/json' });
      res.end(protobuf ? Buffer.alloc(0) : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Attr = { key: string; value: Record<string, unknown> };
function jsonScalar(value: Record<string, unknown>): string | number | boolean {
  const v = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
  return typeof v === 'string' && 'intValue' in value ? Number(v) : (v as string | number | boolean);
}
function attrs(list: Attr[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    const array = value.arrayValue as { values?: Array<Record<string, unknown>> } | undefined;
    out[key] = array ? (array.values ?? []).map(jsonScalar) : jsonScalar(value);
  }
  return out;
}

function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: attrs(s.attributes),
          droppedAttributesCount: s.droppedAttributesCount ?? 0,
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attrs(e.attributes) })),
          resource,
        });
      }
    }
  }
  return out;
}

// --- protobuf wire format: just enough of ExportTraceServiceRequest -------------------------------

type Field = { number: number; wire: number; value: bigint | Buffer };

function fields(buffer: Buffer): Field[] {
  const out: Field[] = [];
  let offset = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[offset++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (offset < buffer.length) {
    const key = Number(varint());
    const number = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ number, wire, value: varint() });
    else if (wire === 1) {
      out.push({ number, wire, value: buffer.subarray(offset, offset + 8) });
      offset += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ number, wire, value: buffer.subarray(offset, offset + length) });
      offset += length;
    } else if (wire === 5) {
      out.push({ number, wire, value: buffer.subarray(offset, offset + 4) });
      offset += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const bytesOf = (f: Field[], n: number) => f.filter((x) => x.number === n).map((x) => x.value as Buffer);

function anyValue(buffer: Buffer): AttributeValue {
  const [f] = fields(buffer);
  if (!f) return '';
  if (f.number === 1) return (f.value as Buffer).toString('utf8');
  if (f.number === 2) return f.value !== 0n;
  if (f.number === 3) return Number(f.value as bigint);
  if (f.number === 4) return (f.value as Buffer).readDoubleLE(0);
  // ArrayValue: repeated AnyValue values = 1.
  if (f.number === 5) return bytesOf(fields(f.value as Buffer), 1).map((v) => anyValue(v) as string | number | boolean);
  return '';
}

function keyValues(list: Buffer[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list) {
    const f = fields(kv);
    const key = bytesOf(f, 1)[0]?.toString('utf8') ?? '';
    const value = bytesOf(f, 2)[0];
    out[key] = value ? anyValue(value) : '';
  }
  return out;
}

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of bytesOf(fields(body), 1)) {
    const rsFields = fields(rs);
    const resourceBytes = bytesOf(rsFields, 1)[0];
    const resource = resourceBytes ? keyValues(bytesOf(fields(resourceBytes), 1)) : {};
    for (const ss of bytesOf(rsFields, 2)) {
      for (const span of bytesOf(fields(ss), 2)) {
        const f = fields(span);
        out.push({
          traceId: bytesOf(f, 1)[0]?.toString('hex') ?? '',
          spanId: bytesOf(f, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytesOf(f, 4)[0]?.toString('hex') ?? '',
          name: bytesOf(f, 5)[0]?.toString('utf8') ?? '',
          kind: Number((f.find((x) => x.number === 6)?.value as bigint | undefined) ?? 0n),
          attributes: keyValues(bytesOf(f, 9)),
          droppedAttributesCount: Number((f.find((x) => x.number === 10)?.value as bigint | undefined) ?? 0n),
          events: bytesOf(f, 11).map((e) => {
            const ef = fields(e);
            return { name: bytesOf(ef, 2)[0]?.toString('utf8') ?? '', attributes: keyValues(bytesOf(ef, 3)) };
          }),
          resource,
        });
      }
    }
  }
  return out;
}
