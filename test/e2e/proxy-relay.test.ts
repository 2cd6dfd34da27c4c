// How upstream answers are relayed when nothing is renamed: event streams pass through byte for byte
// (split anywhere, any line ending) but for the usage chunk the gateway asked for; large JSON answers
// are forwarded as they came with usage read from their end; malformed or cut-off JSON is a 502.
// The upstream here is scripted per test, down to how its bytes are split into writes.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { until } from '../helpers/proxy-tools.ts';

const SECRET = 'sk-upstream-secret-relay-0123456789abcdef';
process.env.TEST_UPSTREAM_KEY = SECRET;
const key = newKey('k', 'acme');
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Handler = (req: IncomingMessage, res: ServerResponse, body: Record<string, any>) => void | Promise<void>;

interface ScriptedUpstream {
  url: string;
  handle: Handler;
  requests: Array<{ path: string; body: Record<string, any> }>;
  /** Answers whose client left before they ended. */
  aborted: number;
  close(): Promise<void>;
}

async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const upstream = { requests: [], aborted: 0, handle: () => {} } as unknown as ScriptedUpstream;
  const server = createServer(async (req, res) => {
    res.once('close', () => {
      if (!res.writableFinished) upstream.aborted++;
    });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text ? JSON.parse(text) : {};
    upstream.requests.push({ path: req.url!, body });
    await upstream.handle(req, res, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  upstream.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return upstream;
}

/** Writes an event stream in the given pieces, each its own write (and so, with a pause, its own read upstream). */
async function writePieces(res: ServerResponse, pieces: string[], pauseMs = 5) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const piece of pieces) {
    res.write(piece);
    await wait(pauseMs);
  }
  res.end();
}

/** Resolves on 'drain' or 'close', whichever comes first, and removes the other listener (one per wait would pile up). */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Cuts text at the given offsets. */
const cut = (text: string, at: number[]) => [0, ...at].map((start, i) => text.slice(start, at[i] ?? text.length));

const chunk = (i: number, eol: string) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"${i} "},"finish_reason":null}]}${eol}${eol}`;
const usageChunk = (eol: string) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":13,"completion_tokens":4,"total_tokens":17}}${eol}${eol}`;
const finish = (eol: string) => `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}${eol}${eol}`;

function chatStream(eol: string, includeUsage: boolean) {
  return [chunk(0, eol), `: comment${eol}${eol}`, chunk(1, eol), chunk(2, eol), chunk(3, eol), finish(eol), includeUsage ? usageChunk(eol) : '', `data: [DONE]${eol}${eol}`].join('');
}

/** A 38 KB embeddings answer (two inputs) the way OpenAI writes it: usage last. */
function embeddingsAnswer(modelName: string, extra = '') {
  const embedding = (seed: number) => Array.from({ length: 1536 }, (_, i) => Number((Math.sin(i * 12.9898 + seed) * 0.05).toFixed(9)));
  const data = [0, 1].map((index) => ({ object: 'embedding', index, embedding: embedding(index), note: extra }));
  return JSON.stringify({ object: 'list', data, model: modelName, usage: { prompt_tokens: 8, total_tokens: 8 } });
}

function sendJson(res: ServerResponse, text: string) {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

describe('relaying answers byte for byte', () => {
  let up: ScriptedUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    up = await startScriptedUpstream();
    gw = await startTestGateway([
      upstream('u', up.url),
      model('m', [{ upstream: 'u' }]),
      model('renamed', [{ upstream: 'u', model: 'upstream-name' }]),
      model('resp', [{ upstream: 'u' }]),
      plan('pro', ['m', 'renamed', 'resp'], { requestsPerMinute: 1000, tokensPerMinute: 1_000_000 }),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw.stop();
    await up.close();
  });
  afterEach(() => {
    up.requests.length = 0;
  });

  const logOf = async (requestId: string | null) => {
    await until(() => gw.logs.some((l) => l.requestId === requestId), 'the access log line');
    return gw.logs.find((l) => l.requestId === requestId)!;
  };

  for (const [name, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ]) {
    it(`${name} stream split mid-event: the client gets the upstream's bytes without the usage chunk, usage is logged`, async () => {
      const upstreamText = chatStream(eol, true);
      const usageAt = upstreamText.indexOf('"usage"');
      // Pieces that cut events, the usage key itself, and a CR from its LF.
      up.handle = (_req, res) => writePieces(res, cut(upstreamText, [7, 150, 151, usageAt + 3, usageAt + 60, upstreamText.length - 1]));
      const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] } });
      expect(up.requests[0].body.stream_options).toEqual({ include_usage: true });
      expect(response.status).toBe(200);
      expect(response.text).toBe(chatStream(eol, false));
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(response.headers.get('x-accel-buffering')).toBe('no');
      expect(response.headers.get('x-ratelimit-limit-requests')).toBeTruthy();
      const id = response.headers.get('x-service-request-id');
      expect(id).toBeTruthy();
      expect(response.headers.get('x-request-id')).toBe(id);
      expect(await logOf(id)).toMatchObject({ status: 200, inputTokens: 13, outputTokens: 4, upstream: 'u' });
    });
  }

  it('the SDK reads a passed-through stream; with include_usage it gets the usage chunk as the upstream sent it', async () => {
    up.handle = (_req, res, body) => writePieces(res, cut(chatStream('\n', body.stream_options?.include_usage === true), [100, 333, 334, 700]));
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('0 1 2 3 ');
    expect(chunks.some((c) => c.choices.length === 0)).toBe(false);
    const withUsage = await client.chat.completions.create({ model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const all = [];
    for await (const c of withUsage) all.push(c);
    expect(all.at(-1)!.usage).toEqual({ prompt_tokens: 13, completion_tokens: 4, total_tokens: 17 });
  });

  it('a stream that breaks mid-event ends with whole events and an error event the SDK raises; nothing half-sent', async () => {
    const text = chatStream('\n', true);
    const breakAt = text.indexOf(chunk(2, '\n')) + 30;
    up.handle = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(text.slice(0, breakAt));
      await wait(30);
      res.socket!.destroy();
    };
    const response = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] } });
    expect(response.text.startsWith(chunk(0, '\n') + ': comment\n\n' + chunk(1, '\n') + 'data: {"error":')).toBe(true);
    expect(response.text).toContain('"code":"upstream_stream_error"');
    expect(await logOf(response.headers.get('x-service-request-id'))).toMatchObject({ status: 200, streamError: 'upstream_stream_error' });

    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const error = await (async () => {
      for await (const _ of stream);
    })().catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String(error.message)).toContain('upstream stream failed');
  });

  it('the stream is charged to its usage when it ends (plan limits settle on the response closing)', async () => {
    const tokensLeft = async () => Number((await raw(gw, 'GET', '/v1/models', { key: key.key })).headers.get('x-ratelimit-remaining-tokens'));
    up.handle = (_req, res) => writePieces(res, cut(chatStream('\n', true), [500]));
    const before = await tokensLeft();
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    for await (const c of stream) expect(c.usage ?? null).toBeNull();
    await until(async () => (await tokensLeft()) === before - 17, 'the stream to be settled to 13 + 4 tokens');
  });

  it('a client that reads nothing stalls the upstream (backpressure through the pass-through relay)', async () => {
    const MB = 1024 * 1024;
    const event = `data: {"id":"c","choices":[{"index":0,"delta":{"content":"${'x'.repeat(4000)}"}}]}\n\n`;
    const events = 16_000;
    let sent = 0;
    let blocked = false;
    up.handle = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < events && !res.destroyed; i++) {
        sent += event.length;
        if (!res.write(event)) {
          blocked = true;
          await drainedOrClosed(res);
          blocked = false;
        }
      }
      res.end('data: [DONE]\n\n');
    };
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (response) => {
        response.pause();
        resolve(response);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    });
    let last = -1;
    let since = Date.now();
    await until(() => {
      if (sent >= events * event.length) return true;
      if (!blocked || sent !== last) {
        last = sent;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= 500;
    }, 'the upstream to stall or finish', 30_000);
    expect(sent).toBeLessThan(24 * MB);
    let bytes = 0;
    for await (const piece of res) bytes += (piece as Buffer).length;
    expect(bytes).toBe(events * event.length + 'data: [DONE]\n\n'.length);
  });

  it('a client that leaves mid-stream releases the upstream request', async () => {
    const aborted = up.aborted;
    up.handle = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 1000 && !res.destroyed; i++) {
        res.write(chunk(i, '\n'));
        await wait(10);
      }
      res.end();
    };
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    let seen = 0;
    for await (const _ of stream) if (++seen === 3) break;
    controller.abort();
    await until(() => up.aborted > aborted, 'the upstream request to be aborted');
  });

  it('headers reach the client before the first event when the upstream is slow to send one', async () => {
    up.handle = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      await wait(400);
      res.end(`${chunk(0, '\n')}data: [DONE]\n\n`);
    };
    const started = Date.now();
    const headersAt = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (res) => {
        resolve(Date.now() - started);
        res.resume();
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
    });
    expect(headersAt).toBeLessThan(300);
  });

  it('Responses stream passed through: its id is remembered from response.created, its usage logged', async () => {
    const events = [
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_streamed","object":"response","model":"resp","status":"in_progress","output":[],"usage":null}}\n\n',
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hello"}\n\n',
      'event: response.completed\ndata: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_streamed","object":"response","model":"resp","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}\n\n',
    ].join('');
    up.handle = (req, res) => {
      if (req.method === 'GET') return sendJson(res, '{"id":"resp_streamed","object":"response","status":"completed"}');
      return writePieces(res, cut(events, [40, 200, 201]));
    };
    const response = await raw(gw, 'POST', '/v1/responses', { key: key.key, body: { model: 'resp', stream: true, input: 'hi' } });
    expect(response.text).toBe(events);
    expect(await logOf(response.headers.get('x-service-request-id'))).toMatchObject({ inputTokens: 5, outputTokens: 9 });
    const fetched = await raw(gw, 'GET', '/v1/responses/resp_streamed', { key: key.key });
    expect(fetched.status).toBe(200);
    expect(up.requests.at(-1)!.path).toBe('/v1/responses/resp_streamed');
  });

  it('a large JSON answer is forwarded as it came; usage is read from its end', async () => {
    const text = embeddingsAnswer('m');
    expect(text.length).toBeGreaterThan(32 * 1024);
    up.handle = (_req, res) => sendJson(res, text);
    const { data, response } = await client.embeddings.create({ model: 'm', input: 'hello', encoding_format: 'float' }).withResponse();
    expect(data.data[1].embedding).toHaveLength(1536);
    expect(data.usage).toEqual({ prompt_tokens: 8, total_tokens: 8 });
    expect(await logOf(response.headers.get('x-service-request-id'))).toMatchObject({ status: 200, inputTokens: 8, outputTokens: 0 });
    const rawAnswer = await raw(gw, 'POST', '/v1/embeddings', { key: key.key, body: { model: 'm', input: 'hello' } });
    expect(rawAnswer.text).toBe(text);
    expect(rawAnswer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(rawAnswer.headers.get('content-length'))).toBe(text.length);
  });

  it('a large JSON answer under a renamed model: the client sees its public name, everything else unchanged', async () => {
    up.handle = (_req, res, body) => sendJson(res, embeddingsAnswer(body.model));
    const { data, response } = await client.embeddings.create({ model: 'renamed', input: 'hello', encoding_format: 'float' }).withResponse();
    expect(up.requests[0].body.model).toBe('upstream-name');
    expect(data.model).toBe('renamed');
    expect(data).toEqual({ ...JSON.parse(embeddingsAnswer('upstream-name')), model: 'renamed' });
    expect(await logOf(response.headers.get('x-service-request-id'))).toMatchObject({ inputTokens: 8 });
  });

  it('the upstream credential never reaches the client, small answer or large', async () => {
    for (const text of [`{"object":"echo","leak":"${SECRET}","usage":{"prompt_tokens":1}}`, embeddingsAnswer('m', `key ${SECRET}`)]) {
      up.handle = (_req, res) => sendJson(res, text);
      const response = await raw(gw, 'POST', '/v1/embeddings', { key: key.key, body: { model: 'm', input: 'hello' } });
      expect(response.status).toBe(200);
      expect(response.text).not.toContain(SECRET);
      expect(response.text).toContain('[redacted]');
      expect(response.json).toBeTruthy();
    }
  });

  it('a malformed JSON answer, small or large, or one cut off at its end, is a 502', async () => {
    const large = embeddingsAnswer('m');
    const answers = [
      '{"object":"list","data":[1,2,',
      '<html>Bad gateway</html>',
      '',
      large.slice(0, large.length - 1),
      large.slice(0, large.indexOf('"usage"')),
      `<html>${large}`,
      '{"object":"list","data":[{{"index":0}],"usage":{"prompt_tokens":1}}',
    ];
    for (const text of answers) {
      up.handle = (_req, res) => sendJson(res, text);
      const response = await raw(gw, 'POST', '/v1/embeddings', { key: key.key, body: { model: 'm', input: 'hello' } });
      const error = expectErrorShape(response, 502, 'upstream_invalid_response');
      expect(error.message).toContain("'u'");
    }
  });

  it('a large JSON answer whose connection drops before the end is a 502, not a 500', async () => {
    const large = embeddingsAnswer('m');
    expect(large.length).toBeGreaterThan(30_000);
    up.handle = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(large) });
      res.write(large.slice(0, 30_000));
      await wait(30);
      res.socket!.destroy();
    };
    const response = await raw(gw, 'POST', '/v1/embeddings', { key: key.key, body: { model: 'm', input: 'hello' } });
    expectErrorShape(response, 502, 'upstream_invalid_response');
  });
});
