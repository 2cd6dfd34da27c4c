import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { Context } from 'koa';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Exchanges } from '../exchange/exchanges.ts';
import { SseStream } from './sse.ts';

/** Just what SseStream touches of a Koa context. */
function fakeContext(): Context {
  const exchange = new Exchanges(pino({}, new Writable({ write: (_c, _e, done) => done() }))).begin('req_sse', 'POST', '/v1/chat/completions');
  return { set() {}, req: { socket: { setNoDelay() {} } }, res: new EventEmitter(), state: { exchange } } as unknown as Context;
}

describe('SseStream', () => {
  it('waits for the reader on backpressure and leaves no listener behind per wait', async () => {
    const sse = new SseStream(fakeContext());
    const closeListeners = sse.stream.listenerCount('close');
    const big = 'x'.repeat(64 * 1024);
    let received = 0;
    for (let i = 0; i < 50; i++) {
      const sent = sse.send({ big });
      // The reader takes everything, which lets the writer go on.
      sse.stream.read();
      await sent;
      received++;
    }
    expect(received).toBe(50);
    expect(sse.stream.listenerCount('close')).toBe(closeListeners);
    expect(sse.stream.listenerCount('drain')).toBe(0);
  });
});
