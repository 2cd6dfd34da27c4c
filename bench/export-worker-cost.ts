// What the trace export worker costs per span, alone: the gateway's own worker
// (gateway/src/telemetry/trace-export-worker.ts) is fed kept requests' facts as the forwarder posts them
// (a batch at a time), makes their spans, and exports them with the exporter the OTEL_* variables name to a local sink in a
// process of its own. Its thread's CPU (and V8's helper threads', which collect its heap) is read from
// /proc and divided by the spans. Inside a loaded gateway these figures drown in the machine's noise
// (telemetry-cost.ts); here rounds read within about 10% of each other.
// Usage: node bench/export-worker-cost.ts [--spans 20000] [--batch 140] [--rounds 3] [--gap-ms 20]
//        OTEL_TRACES_EXPORTER=none: the replay into the worker's SDK alone, without the exporter
//        OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the JSON encoding (http/protobuf by default)
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { forkService, threadGroupCpuSeconds } from './lib/procs.ts';
import type { ExportWorkerData, FromExportWorker, ToExportWorker } from '../gateway/src/telemetry/span-forwarder.ts';
import type { RequestFacts } from '../gateway/src/telemetry/trace-facts.ts';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const SPANS = Number(option('--spans') ?? 20_000);
const BATCH = Number(option('--batch') ?? 140);
const ROUNDS = Number(option('--rounds') ?? 3);
const GAP_MS = Number(option('--gap-ms') ?? 20);

const sink = await forkService('otlp-sink', path.join(import.meta.dirname, 'otlp-sink.ts'), {});
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.origin;
process.env.OTEL_EXPORTER_OTLP_PROTOCOL ??= 'http/protobuf';
const workerData: ExportWorkerData = { scope: { name: 'tollgate-gateway', version: '0.1.0' } };
const worker = new Worker(path.join(import.meta.dirname, '..', 'gateway', 'src', 'telemetry', 'trace-export-worker.ts'), { workerData });
let taken = 0;
worker.on('message', (message: FromExportWorker) => {
  if (message.type === 'taken') taken += message.count;
  if (message.type === 'failed') console.error(`worker: ${message.message}`);
});

// A proxied chat request's facts (two spans: the server span and its attempt's client span), with the
// figures request-telemetry.ts gathers for it.
let counter = 0;
const id = (chars: number) => (++counter).toString(16).padStart(chars, '0');
const now = (): [number, number] => {
  const ms = performance.timeOrigin + performance.now();
  return [Math.floor(ms / 1000), Math.floor((ms % 1000) * 1e6)];
};
const SPANS_PER_REQUEST = 2;
function request(): RequestFacts {
  const usage = { inputTokens: 12, outputTokens: 40 };
  const attempt = { upstream: 'bench', provider: '_OTHER', address: '127.0.0.1', port: 8080, model: 'bench-model' };
  return {
    traceId: id(32),
    spanId: id(16),
    startTime: now(),
    endTime: now(),
    method: 'POST',
    path: '/v1/chat/completions',
    requestId: `req_${id(24)}`,
    attempts: [{ ...attempt, spanId: id(16), startTime: now(), endTime: now(), number: 1, upstreamModel: 'bench-model', status: 200, error: undefined, openAtEnd: true }],
    request: {
      requestId: '', traceId: null, method: 'POST', route: '/v1/chat/completions', status: 200, errorCode: null, errorReason: null, errorType: null, operation: 'chat',
      model: 'bench-model', responseModel: 'bench-model', responseModelName: 'bench-model', finishReasons: ['stop'], provider: '_OTHER', durationS: 0.01, firstByteS: null,
      usage, account: 'bench-account', plan: 'bench-plan',
      attempts: [{ ...attempt, outcome: 'success', errorType: null, status: 200, durationS: 0.01, answered: true, responseModel: 'bench-model', responseModelLabel: 'bench-model', skipped: false }],
    },
  };
}

/** Posts `count` spans in batches, as the forwarder does, and waits until the worker has taken them all. */
async function feed(count: number): Promise<void> {
  const until = taken + count;
  for (let sent = 0; sent < count; sent += BATCH) {
    const requests: RequestFacts[] = [];
    while (requests.length * SPANS_PER_REQUEST < BATCH) requests.push(request());
    worker.postMessage({ type: 'requests', requests } satisfies ToExportWorker);
    await sleep(GAP_MS);
  }
  while (taken < until) await sleep(5);
}

const exporter = process.env.OTEL_TRACES_EXPORTER ?? `otlp (${process.env.OTEL_EXPORTER_OTLP_PROTOCOL})`;
console.log(`export worker, ${exporter}: ${SPANS} spans a round in batches of ${BATCH}, one every ${GAP_MS} ms, ${ROUNDS} rounds after a warm-up`);
await feed(Math.min(SPANS, 5000));
for (let round = 0; round < ROUNDS; round++) {
  const before = threadGroupCpuSeconds(process.pid);
  await feed(SPANS);
  // The batch processor exports what it holds within OTEL_BSP_SCHEDULE_DELAY (5 s by default).
  await sleep(Number(process.env.OTEL_BSP_SCHEDULE_DELAY ?? 5000) + 500);
  const after = threadGroupCpuSeconds(process.pid);
  const perSpan = (group: string) => ((((after.get(group) ?? 0) - (before.get(group) ?? 0)) / SPANS) * 1e6).toFixed(1);
  console.log(`round ${round + 1}: export worker ${perSpan('WorkerThread')} µs a span; V8's helper threads ${perSpan('V8Worker')} µs (they also collect this process's main heap)`);
}
await new Promise<void>((resolve) => {
  worker.on('message', (message: FromExportWorker) => message.type === 'done' && resolve());
  worker.postMessage({ type: 'shutdown', id: 1 } satisfies ToExportWorker);
});
await worker.terminate();
await sink.stop();
