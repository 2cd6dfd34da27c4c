import { Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../../test/helpers/proxy-tools.ts';
import { SpanForwarder } from './span-forwarder.ts';
import type { AttemptFacts, RequestFacts } from './trace-facts.ts';

// A worker that takes every batch as the export worker does (it answers `taken` with the batch's
// spans) and tells the test what it got.
const ECHO = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (message) => {
  if (message.type !== 'requests') return parentPort.postMessage({ type: 'done', id: message.id });
  const count = message.requests.reduce((sum, r) => sum + 1 + r.attempts.length, 0);
  parentPort.postMessage({ type: 'got', ids: message.requests.map((r) => r.requestId) });
  parentPort.postMessage({ type: 'taken', count });
});`;

const attempt = { spanId: '1'.repeat(16), startTime: [1, 0], endTime: [2, 0], number: 1, upstream: 'up', provider: 'openai', address: 'a', port: 443, upstreamModel: null, openAtEnd: true } as AttemptFacts;
const facts = (requestId: string, attempts = 1, extra: Partial<RequestFacts> = {}) =>
  ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), startTime: [1, 0], endTime: [2, 0], method: 'POST', path: '/v1/chat/completions', requestId, attempts: Array(attempts).fill(attempt), request: {}, ...extra }) as unknown as RequestFacts;

describe('SpanForwarder: kept requests\' facts to the export worker, counted in spans', () => {
  let forwarder: SpanForwarder | null = null;
  afterEach(async () => {
    await forwarder?.shutdown();
    forwarder = null;
  });

  function start(options: { maxQueueSize: number; batchSize: number; delayMs: number }) {
    const worker = new Worker(ECHO, { eval: true });
    const batches: string[][] = [];
    worker.on('message', (message: { type: string; ids?: string[] }) => message.type === 'got' && batches.push(message.ids!));
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({ write: (chunk, _e, done) => (lines.push(JSON.parse(String(chunk))), done()) });
    forwarder = new SpanForwarder(worker, pino({}, sink), options);
    return { forwarder, batches, lines };
  }

  it('posts once a batch\'s spans are queued, never splitting a request\'s spans across batches', async () => {
    const { forwarder, batches } = start({ maxQueueSize: 100, batchSize: 4, delayMs: 60_000 });
    forwarder.add(facts('r1', 1));
    // 2 + 3 spans: the batch size is reached, and r2 does not fit beside r1, so each goes alone.
    forwarder.add(facts('r2', 2));
    await until(() => batches.length === 2, 'two batches');
    expect(batches).toEqual([['r1'], ['r2']]);
    forwarder.add(facts('r3', 0));
    forwarder.add(facts('r4', 0));
    forwarder.add(facts('r5', 0));
    forwarder.add(facts('r6', 0));
    await until(() => batches.length === 3, 'a third batch');
    expect(batches[2]).toEqual(['r3', 'r4', 'r5', 'r6']);
  });

  it('drops a request whose spans do not fit beside those held, says so, and takes more once the worker has taken them', async () => {
    const { forwarder, batches, lines } = start({ maxQueueSize: 3, batchSize: 3, delayMs: 10 });
    forwarder.add(facts('fits', 1));
    forwarder.add(facts('too-many', 1));
    await until(() => batches.length === 1, 'the first batch');
    expect(lines.filter((l) => l.msg === 'trace export is behind: spans dropped')).toEqual([expect.objectContaining({ dropped: 2, maxQueueSize: 3 })]);
    // Taken (the worker answered): the queue is free again.
    await until(async () => (forwarder.add(facts('later', 0)), batches.flat().includes('later')), 'a later request exported');
    expect(batches.flat()).not.toContain('too-many');
  });

  it('drops a batch that cannot be passed to the worker, says so, and goes on', async () => {
    const { forwarder, batches, lines } = start({ maxQueueSize: 10, batchSize: 2, delayMs: 10 });
    forwarder.add(facts('uncloneable', 1, { samplerAttributes: { rule: (() => 1) as unknown as string } }));
    expect(lines).toEqual([expect.objectContaining({ msg: 'trace export: a batch could not be passed to the worker and was dropped', spans: 2 })]);
    forwarder.add(facts('next', 1));
    await until(() => batches.length === 1, 'the next batch');
    expect(batches).toEqual([['next']]);
  });
});
