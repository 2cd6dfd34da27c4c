// An OpenAI-compatible upstream for tests: a real HTTP server on port 0 whose behaviour is set per
// test (status codes, latency, stream cadence, resets mid-stream, hangs, slow reads). It records
// every request it receives (sizes and hashes; multipart forms parsed) and every request whose
// client went away before the answer ended, keeps files, batches and threads (upstream-store.ts),
// and counts what it has written of big answers, so tests can see backpressure reach it.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { FakeStore, sendJson, type FakeForm } from './upstream-store.ts';

export interface FakeBehaviour {
  /** Answer with this status and an OpenAI error body instead of a result. */
  status?: number;
  /** Extra response headers (e.g. retry-after-ms on a 429). */
  headers?: Record<string, string>;
  /** Wait before sending headers. */
  delayMs?: number;
  /** Never answer (until the client gives up). */
  hang?: boolean;
  /** Stream: number of content chunks and the pause between them. */
  chunks?: number;
  chunkIntervalMs?: number;
  /** Stream: destroy the socket after this many chunks. */
  resetAfterChunks?: number;
  /** Stream: stop sending (but keep the socket open) after this many chunks. */
  stallAfterChunks?: number;
  /** Pause between reads of the request body (a slow upstream). */
  readDelayMs?: number;
  /** Text of a chat answer; defaults to one naming the upstream. */
  text?: string;
  /** The `model` its answers name (as OpenAI answers a dated snapshot for an alias); defaults to the model asked for. */
  answerModel?: string;
  /** Chat and completion answers' finish_reason (default `stop`). */
  finishReason?: string;
  /** Bytes of binary answers (audio speech, file content). */
  binaryBytes?: number;
  /** Stream: characters of filler in each content chunk (to send a lot). */
  chunkPadding?: number;
  /**
   * The `usage` its chat, responses and embeddings answers report (a stream's usage chunk too),
   * instead of the defaults: to report cached input and reasoning tokens as OpenAI details them.
   */
  usage?: Record<string, unknown>;
  /** Transcriptions and translations in `json` report `usage: {type: "duration", seconds}` with these seconds. */
  audioSeconds?: number;
  /** Answers in its own way after the request was received (garbage, huge events, hangs after the first byte). */
  respond?: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The body as text, up to its first MB. */
  body: string;
  bytes: number;
  sha256: string;
  /** Multipart requests, parsed: fields, and each file part's size and hash. */
  form?: FakeForm;
}

export interface FakeUpstream {
  name: string;
  url: string;
  requests: RecordedRequest[];
  /** Requests whose client disconnected before the response finished. */
  aborted: number;
  /** Bytes of the current big answer (speech, padded stream) the socket has accepted so far. */
  sent: number;
  /** True while the current big answer waits for the socket to drain. */
  blocked: boolean;
  store: FakeStore;
  behave(behaviour: FakeBehaviour): void;
  close(): Promise<void>;
}

/** Uploaded files are kept for download up to this size. */
const MAX_KEPT = 8 * 1024 * 1024;
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeUpstream(name: string, initial: FakeBehaviour = {}): Promise<FakeUpstream> {
  let behaviour = initial;
  const fake = { name, url: '', requests: [] as RecordedRequest[], aborted: 0, sent: 0, blocked: false, store: new FakeStore(name) } as FakeUpstream;

  const server = createServer(async (req, res) => {
    const b = behaviour;
    res.once('close', () => {
      if (!res.writableFinished) fake.aborted++;
    });
    let record: RecordedRequest;
    try {
      record = await receive(req, b);
    } catch {
      return res.destroy();
    }
    fake.requests.push(record);
    if (b.hang) return;
    if (b.delayMs) await wait(b.delayMs);
    if (b.respond) return b.respond(req, res);
    if (b.status && b.status >= 400) return sendError(res, b);
    await answer(req, res, record, b, fake);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  fake.behave = (next) => {
    behaviour = next;
  };
  fake.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}

/** Reads a request body without keeping big ones: hashed and counted, multipart parsed part by part. */
async function receive(req: IncomingMessage, b: FakeBehaviour): Promise<RecordedRequest> {
  const hash = createHash('sha256');
  const kept: Buffer[] = [];
  let bytes = 0;
  const tap = new Transform({
    async transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      hash.update(chunk);
      // Large uploads are only counted, so a test can send more than it would want held in memory.
      if (bytes < 1024 * 1024) kept.push(chunk);
      if (b.readDelayMs) await wait(b.readDelayMs);
      callback(null, chunk);
    },
  });
  let form: FakeForm | undefined;
  if (req.headers['content-type']?.startsWith('multipart/form-data')) {
    form = { fields: {}, files: [] };
    const parser = busboy({ headers: req.headers, limits: { fieldSize: 1024 * 1024 } });
    const parts: Promise<void>[] = [];
    parser.on('field', (field, value) => (form!.fields[field] ??= []).push(value));
    // Only uploads to /files are kept (for downloads); other parts are hashed and counted as they pass.
    const keep = new URL(req.url!, 'http://fake').pathname.endsWith('/files');
    parser.on('file', (field, stream, info) => parts.push(receivePart(form!, field, stream, info, keep)));
    await pipeline(req, tap, parser);
    await Promise.all(parts);
  } else {
    await pipeline(req, tap, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  }
  return { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(kept).toString('utf8'), bytes, sha256: hash.digest('hex'), form };
}

async function receivePart(form: FakeForm, field: string, stream: NodeJS.ReadableStream, info: busboy.FileInfo, keep: boolean): Promise<void> {
  const hash = createHash('sha256');
  const kept: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    hash.update(chunk);
    if (keep && bytes <= MAX_KEPT) kept.push(chunk);
  }
  form.files.push({ field, filename: info.filename ?? 'file', mimeType: info.mimeType, bytes, sha256: hash.digest('hex'), content: keep && bytes <= MAX_KEPT ? Buffer.concat(kept) : null });
}

/** Writes and waits for the socket to take it, counting what went out: a slow reader stalls this. */
async function write(res: ServerResponse, fake: FakeUpstream, chunk: Buffer | string): Promise<void> {
  fake.sent += Buffer.byteLength(chunk);
  if (res.write(chunk)) return;
  fake.blocked = true;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
  fake.blocked = false;
}

function sendError(res: ServerResponse, b: FakeBehaviour) {
  const type = b.status === 429 ? 'rate_limit_error' : b.status! >= 500 ? 'server_error' : 'invalid_request_error';
  res.writeHead(b.status!, { 'content-type': 'application/json', ...(b.headers ?? {}) });
  res.end(JSON.stringify({ error: { message: `fake upstream says ${b.status}`, type, param: null, code: b.status === 429 ? 'rate_limit_exceeded' : null } }));
}

async function answer(req: IncomingMessage, res: ServerResponse, record: RecordedRequest, b: FakeBehaviour, fake: FakeUpstream) {
  const name = fake.name;
  const json = record.headers['content-type']?.includes('json') && record.body ? JSON.parse(record.body) : {};
  const url = new URL(record.path, 'http://fake');
  const path = url.pathname;
  if (fake.store.handle(res, req.method!, path, url.searchParams, json, record.form)) return;
  if (path.endsWith('/chat/completions')) return json.stream ? streamChat(res, fake, json, b) : sendJson(res, chatCompletion(json, b, name));
  if (path.endsWith('/completions')) return json.stream ? streamCompletion(res, fake, json, b) : sendJson(res, textCompletion(json, b, name));
  if (path.endsWith('/embeddings')) {
    const inputs = Array.isArray(json.input) ? json.input : [json.input];
    // The official SDKs ask for base64 unless told otherwise, and decode it.
    const vector = json.encoding_format === 'base64' ? Buffer.from(new Float32Array([0.1, 0.2, 0.3]).buffer).toString('base64') : [0.1, 0.2, 0.3];
    return sendJson(res, { object: 'list', model: json.model, data: inputs.map((_: unknown, index: number) => ({ object: 'embedding', index, embedding: vector })), usage: b.usage ?? { prompt_tokens: 3, total_tokens: 3 } });
  }
  if (path.endsWith('/responses')) {
    return sendJson(res, { id: `resp_${name}_${record.bytes}`, object: 'response', created_at: 1, status: 'completed', model: b.answerModel ?? json.model, output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: b.text ?? `answer from ${name}`, annotations: [] }] }], usage: b.usage ?? { input_tokens: 4, output_tokens: 5, total_tokens: 9 } });
  }
  if (path.endsWith('/audio/speech')) {
    const size = b.binaryBytes ?? 4096;
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': size });
    fake.sent = 0;
    const block = Buffer.alloc(Math.min(size, 64 * 1024), 1);
    for (let sent = 0; sent < size && !res.destroyed; sent += block.length) await write(res, fake, block.subarray(0, Math.min(block.length, size - sent)));
    return res.end();
  }
  if (path.endsWith('/audio/transcriptions') || path.endsWith('/audio/translations')) return transcript(res, record, name, b);
  if (path.endsWith('/moderations')) {
    // As OpenAI answers: one result per input (a string or an array of them), no usage.
    const inputs = Array.isArray(json.input) && json.input.every((item: unknown) => typeof item === 'string') ? json.input : [json.input];
    return sendJson(res, { id: `modr-${name}-${record.bytes}`, model: b.answerModel ?? json.model, results: inputs.map(() => ({ flagged: false, categories: { violence: false }, category_scores: { violence: 0.001 } })) });
  }
  if (path.endsWith('/images/generations')) {
    // As dall-e answers: one image per `n`, no usage.
    return sendJson(res, { created: 1, data: Array.from({ length: json.n ?? 1 }, (_, i) => ({ b64_json: Buffer.from(`image ${i} by ${name} at ${json.size ?? 'default'}`).toString('base64') })) });
  }
  if (path.endsWith('/images/edits')) {
    const model = record.form?.fields.model?.[0];
    return sendJson(res, { created: 1, data: [{ b64_json: Buffer.from(`edited by ${name} as ${model}`).toString('base64') }] });
  }
  return sendJson(res, { object: 'echo', upstream: name, method: record.method, path: record.path, model: json.model ?? null });
}

/** What a transcription endpoint answers, in each response_format, with the content types OpenAI uses. */
function transcript(res: ServerResponse, record: RecordedRequest, name: string, b: FakeBehaviour) {
  const fields = record.form?.fields ?? {};
  const file = record.form?.files.find((f) => f.field === 'file');
  const text = `heard ${file?.bytes ?? 0} bytes at ${name} as ${fields.model?.[0]}`;
  const format = fields.response_format?.[0] ?? 'json';
  if (format === 'json') return sendJson(res, b.audioSeconds === undefined ? { text } : { text, usage: { type: 'duration', seconds: b.audioSeconds } });
  if (format === 'verbose_json') return sendJson(res, { task: 'transcribe', language: 'english', duration: 1.5, text, segments: [] });
  const body = format === 'srt' ? `1\n00:00:00,000 --> 00:00:01,500\n${text}\n` : format === 'vtt' ? `WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n${text}\n` : text;
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

function chatCompletion(json: { model: string; max_tokens?: number; max_completion_tokens?: number }, b: FakeBehaviour, name: string) {
  let usage = b.usage ?? { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
  // A chosen usage is held to the request's output limit, as a real upstream stops at it.
  const limit = json.max_completion_tokens ?? json.max_tokens;
  const stopped = b.usage !== undefined && limit !== undefined && typeof usage.completion_tokens === 'number' && usage.completion_tokens > limit;
  if (stopped) usage = { ...usage, completion_tokens: limit, total_tokens: Number(usage.prompt_tokens) + limit };
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1,
    model: b.answerModel ?? json.model,
    choices: [{ index: 0, message: { role: 'assistant', content: b.text ?? `answer from ${name}`, refusal: null }, logprobs: null, finish_reason: stopped ? 'length' : (b.finishReason ?? 'stop') }],
    usage,
  };
}

async function streamChat(res: ServerResponse, fake: FakeUpstream, json: { model: string; stream_options?: { include_usage?: boolean } }, b: FakeBehaviour) {
  const name = fake.name;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  fake.sent = 0;
  const count = b.chunks ?? 5;
  const padding = b.chunkPadding ? ' '.padEnd(b.chunkPadding, '.') : '';
  // With include_usage on, OpenAI (and Azure) put `"usage": null` on every chunk before the usage chunk.
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: b.answerModel ?? json.model, ...(json.stream_options?.include_usage ? { usage: null } : {}) };
  const send = (value: unknown) => write(res, fake, `data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`);
  await send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  for (let i = 0; i < count; i++) {
    if (b.resetAfterChunks !== undefined && i === b.resetAfterChunks) {
      // Let what was written reach the wire first: a reset drops unflushed writes.
      await wait(20);
      return res.socket?.destroy();
    }
    if (b.stallAfterChunks !== undefined && i === b.stallAfterChunks) return;
    if (b.chunkIntervalMs) await wait(b.chunkIntervalMs);
    if (res.destroyed) return;
    await send({ ...base, choices: [{ index: 0, delta: { content: `${name}-${i} ${padding}` }, finish_reason: null }] });
  }
  await send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: b.finishReason ?? 'stop' }] });
  if (json.stream_options?.include_usage) await send({ ...base, choices: [], usage: b.usage ?? { prompt_tokens: 11, completion_tokens: count, total_tokens: 11 + count } });
  await send('[DONE]');
  res.end();
}

/** The legacy text completion: `completion from <name>`, or its stream ending in usage (when asked) and [DONE]. */
function textCompletion(json: { model: string }, b: FakeBehaviour, name: string) {
  return {
    id: 'cmpl-fake',
    object: 'text_completion',
    created: 1,
    model: b.answerModel ?? json.model,
    choices: [{ text: b.text ?? `completion from ${name}`, index: 0, logprobs: null, finish_reason: b.finishReason ?? 'stop' }],
    usage: { prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 },
  };
}

async function streamCompletion(res: ServerResponse, fake: FakeUpstream, json: { model: string; stream_options?: { include_usage?: boolean } }, b: FakeBehaviour) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const base = { id: 'cmpl-fake', object: 'text_completion', created: 1, model: b.answerModel ?? json.model };
  const send = (value: unknown) => write(res, fake, `data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`);
  const count = b.chunks ?? 3;
  for (let i = 0; i < count; i++) await send({ ...base, choices: [{ text: `${fake.name}-${i} `, index: 0, logprobs: null, finish_reason: null }] });
  await send({ ...base, choices: [{ text: '', index: 0, logprobs: null, finish_reason: b.finishReason ?? 'stop' }] });
  if (json.stream_options?.include_usage) await send({ ...base, choices: [], usage: { prompt_tokens: 6, completion_tokens: count, total_tokens: 6 + count } });
  await send('[DONE]');
  res.end();
}
