// A fake Anthropic API for tests: a real HTTP server on port 0 that checks requests as strictly as
// the Messages API (anthropic-validate.ts) and answers in its wire formats, JSON and SSE.
//
// Endpoints: POST /v1/messages (JSON and `stream: true`), POST /v1/messages/count_tokens,
// GET /v1/models (?limit, ?after_id) and GET /v1/models/{id}. Every request needs `x-api-key` (or,
// as the SDK sends it, `Authorization: Bearer`) equal to `apiKey` (401 authentication_error
// otherwise) and `anthropic-version` (400 without).
//
// Answers are deterministic and computed from the request, so a test cannot pass by accident:
// - the "model" replies `You said: <last user text>` (+ ` [images: …]` naming each image/document
//   source), or, after tool results, `Tool results: <their texts joined by "; ">`;
// - with tools offered (and tool_choice not none), it calls each declared tool whose name appears
//   in the last user text (all of them with tool_choice any, the named one with tool_choice tool),
//   with arguments built from the tool's input_schema (strings = the last user text, numbers = its
//   length, booleans true); a tool without properties is called with `{}`;
// - with output_config.format it replies a JSON document built the same way from the schema;
// - with thinking on it first thinks `Thinking about: <last user text>`, signed with an HMAC the
//   fake verifies when the block is replayed;
// - usage: input_tokens = words of all text in system + messages (+1 per image), output_tokens =
//   words of the reply (+ thinking); `max_tokens` cuts the reply to that many words (stop_reason
//   max_tokens); a stop sequence in the reply cuts it there (stop_reason stop_sequence).
// Scripts (`fake.next(...)`, consumed one per /v1/messages request) inject failures: an error status
// before anything (`{status: 529}`, `{status: 429, retryAfter: '7'}`), an `event: error` after N
// stream events (`{streamErrorAfter: N, errorType}`), a cut stream (`{cutAfter: N}`: the body ends
// without message_stop), cache usage (`{cache: {read, write}}`), and byte-by-byte writes
// (`{byteByByte: true}`), a stream that stops after N events until a promise settles (`{pauseAfter: N,
// resume}`: without `resume` it stays silent until the client leaves), and no answer at all, not even
// its headers, until the client leaves (`{hang: true}`). `requests` logs what arrived (headers, parsed
// body, raw bytes) and the bytes of what the fake answered.
// Options: `apiKey`, `models` (ids served, dated snapshots of them too; others are 404),
// `exclusiveSampling(model)` (refuses temperature with top_p; default: all but claude-3*),
// `userFirst` (the first message must be the user's; default true), `signingKey` (thinking HMAC).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answer, type FakeAnswer } from './anthropic-answer.ts';
import { FakeRefusal, validate, type ValidationOptions } from './anthropic-validate.ts';

export interface AnthropicScript {
  status?: number;
  errorType?: string;
  message?: string;
  retryAfter?: string;
  streamErrorAfter?: number;
  cutAfter?: number;
  cache?: { read: number; write: number };
  byteByByte?: boolean;
  /** Stream: after this many events, write nothing more until `resume` settles (forever without it). */
  pauseAfter?: number;
  resume?: Promise<unknown>;
  /** Send nothing, not even the status line, until the client closes the connection. */
  hang?: boolean;
}

export interface AnthropicRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
  /** The body's bytes as they arrived. */
  raw: Buffer;
  /** The bytes of the answer as the fake wrote them (headers aside), chunk by chunk. */
  answered: Buffer[];
}

export interface FakeAnthropic {
  url: string;
  apiKey: string;
  requests: AnthropicRequest[];
  /** Queues a script for the next /v1/messages request. */
  next(script: AnthropicScript): void;
  close(): Promise<void>;
}

export interface FakeAnthropicOptions extends Partial<ValidationOptions> {
  apiKey?: string;
}

const DEFAULT_MODELS = ['claude-sonnet-4-6', 'claude-haiku-4-5', 'claude-opus-4-6', 'claude-sonnet-4-5', 'claude-3-5-haiku'];
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large',
  429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error',
};

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const validation: ValidationOptions = {
    models: options.models ?? DEFAULT_MODELS,
    exclusiveSampling: options.exclusiveSampling ?? ((model) => !model.startsWith('claude-3')),
    userFirst: options.userFirst ?? true,
    signingKey: options.signingKey ?? randomBytes(16).toString('hex'),
  };
  const scripts: AnthropicScript[] = [];
  const fake = { url: '', apiKey: options.apiKey ?? `sk-ant-fake-${randomBytes(8).toString('hex')}`, requests: [] as AnthropicRequest[] } as FakeAnthropic;
  let ids = 0;

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const text = raw.toString('utf8');
    let body: Record<string, unknown> | null = null;
    try {
      body = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      body = null;
    }
    const url = new URL(req.url ?? '/', 'http://fake');
    const record: AnthropicRequest = { method: req.method ?? '', path: url.pathname + url.search, headers: req.headers, body, raw, answered: [] };
    fake.requests.push(record);
    recordAnswer(res, record.answered);
    const requestId = `req_fake${String(++ids).padStart(6, '0')}`;
    res.setHeader('request-id', requestId);
    try {
      if (req.headers['x-api-key'] !== fake.apiKey && req.headers.authorization !== `Bearer ${fake.apiKey}`) throw new FakeRefusal(401, 'authentication_error', 'invalid x-api-key');
      if (!req.headers['anthropic-version']) throw new FakeRefusal(400, 'invalid_request_error', 'anthropic-version: header is required');
      if (req.method === 'GET' && url.pathname.startsWith('/v1/models')) return models(res, url, validation.models);
      if (req.method !== 'POST') throw new FakeRefusal(404, 'not_found_error', 'Not found');
      if (url.pathname === '/v1/messages/count_tokens') {
        validate(body, validation, true);
        return json(res, 200, { input_tokens: answer(body, validation, `msg_count`).usage.input_tokens });
      }
      if (url.pathname !== '/v1/messages') throw new FakeRefusal(404, 'not_found_error', 'Not found');
      const script = scripts.shift() ?? {};
      if (script.hang) return;
      if (script.status) {
        const headers: Record<string, string> = script.retryAfter ? { 'retry-after': script.retryAfter } : {};
        throw Object.assign(new FakeRefusal(script.status, script.errorType ?? ERROR_TYPES[script.status] ?? 'api_error', script.message ?? `scripted ${script.status}`), { headers });
      }
      validate(body, validation);
      const result = answer(body, validation, `msg_fake${String(ids).padStart(6, '0')}`, script.cache);
      if (body.stream === true) return await stream(res, result, script);
      return json(res, 200, result);
    } catch (error) {
      if (!(error instanceof FakeRefusal)) throw error;
      for (const [name, value] of Object.entries((error as FakeRefusal & { headers?: Record<string, string> }).headers ?? {})) res.setHeader(name, value);
      return json(res, error.status, { type: 'error', error: { type: error.type, message: error.message }, request_id: requestId });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.next = (script) => void scripts.push(script);
  fake.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Keeps a copy of every chunk of the body written to `res` (for tests of byte-exact relays). */
function recordAnswer(res: ServerResponse, into: Buffer[]): void {
  const keep = (chunk: unknown) => {
    if (typeof chunk === 'string') into.push(Buffer.from(chunk));
    else if (chunk instanceof Uint8Array) into.push(Buffer.from(chunk));
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return write(chunk, ...rest);
  }) as ServerResponse['write'];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk !== 'function') keep(chunk);
    return end(chunk, ...rest);
  }) as ServerResponse['end'];
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function models(res: ServerResponse, url: URL, ids: string[]): void {
  const all = ids.map((id, i) => ({ type: 'model', id, display_name: id, created_at: new Date(Date.UTC(2025, 0, 1 + i)).toISOString() }));
  const one = /^\/v1\/models\/(.+)$/.exec(url.pathname);
  if (one) {
    const found = all.find((m) => m.id === decodeURIComponent(one[1]!));
    if (!found) throw new FakeRefusal(404, 'not_found_error', `model: ${one[1]}`);
    return json(res, 200, found);
  }
  const after = url.searchParams.get('after_id');
  const start = after ? all.findIndex((m) => m.id === after) + 1 : 0;
  const limit = Number(url.searchParams.get('limit') ?? 20);
  const page = all.slice(start, start + limit);
  json(res, 200, { data: page, has_more: start + limit < all.length, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
}

/** The Messages stream of an answer: block by block, text in word deltas, tool input in several fragments (the first ""). */
function events(result: FakeAnswer): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  const usage = result.usage;
  out.push(['message_start', { type: 'message_start', message: { ...result, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }]);
  out.push(['ping', { type: 'ping' }]);
  result.content.forEach((block, index) => {
    const b = block as Record<string, unknown>;
    if (b.type === 'text') {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      for (const piece of pieces(String(b.text), 3)) out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }]);
    } else if (b.type === 'thinking') {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }]);
      for (const piece of pieces(String(b.thinking), 2)) out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } }]);
      out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } }]);
    } else if (b.type === 'tool_use') {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } }]);
      const input = JSON.stringify(b.input);
      // A tool without arguments streams no input at all (as Anthropic does for `{}`).
      if (input !== '{}') for (const piece of ['', ...pieces(input, 3)]) out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }]);
    }
    out.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  out.push(['message_delta', { type: 'message_delta', delta: { stop_reason: result.stop_reason, stop_sequence: result.stop_sequence }, usage: { output_tokens: usage.output_tokens } }]);
  out.push(['message_stop', { type: 'message_stop' }]);
  return out;
}

/** `text` cut into about `n` pieces (by characters, so pieces split words and JSON tokens). */
function pieces(text: string, n: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / n));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

async function stream(res: ServerResponse, result: FakeAnswer, script: AnthropicScript): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const all = events(result);
  const write = async (text: string) => {
    if (!script.byteByByte) return void res.write(text);
    for (const byte of Buffer.from(text)) {
      if (!res.write(Buffer.from([byte]))) await new Promise((resolve) => res.once('drain', resolve));
    }
  };
  for (const [i, [name, data]] of all.entries()) {
    if (script.pauseAfter === i) {
      if (!script.resume) return;
      await script.resume;
      if (res.destroyed) return;
    }
    if (script.streamErrorAfter === i) {
      const type = script.errorType ?? 'overloaded_error';
      await write(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message: script.message ?? 'Overloaded' } })}\n\n`);
      return void res.end();
    }
    if (script.cutAfter === i) return void res.end();
    await write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}
