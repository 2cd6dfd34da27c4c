// Listeners the gateway puts on a client's response are per response, never per upstream attempt or
// per relayed chunk: a request that falls back through eleven failing upstreams and relays thousands
// of chunks (with the client reading slowly, so writes wait for 'drain') leaves the response with the
// same listeners as a one-attempt, three-chunk request. A listener added per attempt or per chunk
// would grow with both (and, past ten, print MaxListenersExceededWarning).
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-listeners-0123456789abcdef';
const key = newKey('k', 'acme');
const FAILING = 11;
const EVENTS = ['close', 'finish', 'drain', 'error', 'end'] as const;

let gw: TestGateway;
let failing: ReturnType<typeof createServer>;
let streaming: ReturnType<typeof createServer>;
let chunksAsked = 0;
let failedAnswers = 0;
const warnings: Error[] = [];
const onWarning = (warning: Error) => warnings.push(warning);

const chunk = (i: number) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${String(i).padStart(400, '.')}"}}]}\n\n`;

/** Streams `chunksAsked` chunks, each its own write, waiting for 'drain' like a well-behaved server. */
async function stream(_req: IncomingMessage, res: ServerResponse) {
  for await (const _ of _req);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (let i = 0; i < chunksAsked && !res.destroyed; i++) {
    if (!res.write(chunk(i))) await new Promise<void>((resolve) => {
      const done = () => (res.off('drain', done), res.off('close', done), resolve());
      res.on('drain', done).on('close', done);
    });
  }
  res.end('data: [DONE]\n\n');
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: ReturnType<typeof createServer>; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

/** The response's listener counts just before it finishes (once-listeners for 'close' are still there). */
function countsAtFinish(): Promise<Record<string, number>> {
  return new Promise((resolve) => {
    gw.server.once('request', (_req: IncomingMessage, res: ServerResponse) => {
      res.prependOnceListener('finish', () => resolve(Object.fromEntries(EVENTS.map((e) => [e, res.listenerCount(e)]))));
    });
  });
}

/** A streamed chat completion read slowly (paused between reads) so that the gateway's writes wait for 'drain'. */
function streamedChat(modelName: string): Promise<{ status: number; bytes: number; chunks: number }> {
  return new Promise((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, async (res) => {
      let bytes = 0;
      let text = '';
      for await (const piece of res) {
        bytes += (piece as Buffer).length;
        text += piece;
        if (bytes % 7 === 0) await new Promise((r) => setImmediate(r));
      }
      resolve({ status: res.statusCode!, bytes, chunks: text.split('\n\n').filter((e) => e.includes('chat.completion.chunk')).length });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: modelName, stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  });
}

beforeAll(async () => {
  process.on('warning', onWarning);
  const bad = await listen((req, res) => {
    req.resume();
    failedAnswers += 1;
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded","type":"server_error"}}');
  });
  const good = await listen((req, res) => void stream(req, res));
  failing = bad.server;
  streaming = good.server;
  const failingUpstreams = Array.from({ length: FAILING }, (_, i) => upstream(`down-${i}`, bad.url));
  gw = await startTestGateway([
    ...failingUpstreams,
    upstream('up', good.url),
    model('direct', [{ upstream: 'up', model: 'm' }]),
    model('fallback', [...failingUpstreams.map((u, i) => ({ upstream: u.metadata.name, model: 'm', priority: i })), { upstream: 'up', model: 'm', priority: FAILING }]),
    plan('pro', ['direct', 'fallback']),
    account('acme', 'pro'),
    apiKey(key),
  ]);
});

afterAll(async () => {
  process.off('warning', onWarning);
  await gw?.close();
  for (const server of [failing, streaming]) {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  }
});

describe("the client's response carries the same listeners however many attempts and chunks", () => {
  it('one attempt and 3 chunks, against 12 attempts and 3000 chunks read slowly', async () => {
    chunksAsked = 3;
    const small = countsAtFinish();
    const one = await streamedChat('direct');
    expect(one).toMatchObject({ status: 200, chunks: 3 });

    chunksAsked = 3000;
    const large = countsAtFinish();
    const many = await streamedChat('fallback');
    expect(many).toMatchObject({ status: 200, chunks: 3000 });
    // Twelve attempts were made: the eleven failing upstreams answered 503 first.
    expect(failedAnswers).toBe(FAILING);
    expect(await small).toEqual(await large);
    expect((await large).close).toBeLessThanOrEqual(10);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
