import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { ExchangeAborted } from './exchange.ts';
import { Exchanges } from './exchanges.ts';

function quietLog(lines: unknown[] = []) {
  return pino({}, new Writable({ write: (chunk, _e, done) => (lines.push(JSON.parse(chunk.toString())), done()) }));
}

describe('Exchange', () => {
  it('runs its end hooks once, in order, the common ones last, even when one throws', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const exchanges = new Exchanges(quietLog(lines));
    const order: string[] = [];
    exchanges.onEnd(() => void order.push('common'));
    const exchange = exchanges.begin('req_1', 'POST', '/v1/chat/completions');
    exchange.onEnd(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      order.push('limits');
    });
    exchange.onEnd(() => {
      throw new Error('boom');
    });
    exchange.onEnd(() => void order.push('spool'));
    const ended = exchange.end(200, true, true);
    expect(exchange.end(500, false, false)).toBe(ended);
    await ended;
    expect(order).toEqual(['limits', 'spool', 'common']);
    expect(exchange.status).toBe(200);
    expect(lines.some((l) => l.msg === 'a request end hook failed')).toBe(true);
    // A hook registered after the end still runs, once.
    exchange.onEnd(() => void order.push('late'));
    await exchange.whenEnded;
    expect(order).toEqual(['limits', 'spool', 'common', 'late']);
    expect(exchanges.open).toBe(0);
  });

  it('aborts with the first reason given, also for a signal created afterwards', () => {
    const exchange = new Exchanges(quietLog()).begin('req_2', 'GET', '/v1/models');
    const early = exchange.signal;
    exchange.abort('shutdown');
    exchange.abort('client_gone');
    expect(early.aborted).toBe(true);
    expect(early.reason).toBeInstanceOf(ExchangeAborted);
    expect((early.reason as ExchangeAborted).reason).toBe('shutdown');
    expect(exchange.abortReason).toBe('shutdown');
    const late = new Exchanges(quietLog()).begin('req_3', 'GET', '/v1/models');
    late.abort('timeout');
    expect((late.signal.reason as ExchangeAborted).reason).toBe('timeout');
  });

  it('onAbort listeners run once with the reason, at once when already aborted, without making a signal', () => {
    const exchange = new Exchanges(quietLog()).begin('req_4', 'POST', '/v1/chat/completions');
    const heard: string[] = [];
    exchange.onAbort((reason) => heard.push(`first:${reason}`));
    exchange.abort('client_gone');
    exchange.abort('shutdown');
    exchange.onAbort((reason) => heard.push(`late:${reason}`));
    expect(heard).toEqual(['first:client_gone', 'late:client_gone']);
  });

  it('abortAll reaches every open exchange, idle() resolves when the last one ends', async () => {
    const exchanges = new Exchanges(quietLog());
    const a = exchanges.begin('a', 'GET', '/');
    const b = exchanges.begin('b', 'GET', '/');
    exchanges.abortAll('shutdown');
    expect([a.abortReason, b.abortReason]).toEqual(['shutdown', 'shutdown']);
    let idle = false;
    const waiting = exchanges.idle().then(() => (idle = true));
    await a.end(503, false, false);
    expect(idle).toBe(false);
    await b.end(503, false, false);
    await waiting;
    expect(idle).toBe(true);
  });
});
