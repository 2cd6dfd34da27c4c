// An OpenAI-compatible upstream for tests: a real HTTP server on port 0 whose behaviour is set per
// test (status codes, latency, stream cadence, resets mid-stream, hangs, slow reads). It records
// every request it receives and every request whose client went away before the answer ended.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  /** Bytes of binary answers (audio speech, file content). */
  binaryBytes?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  bytes: number;
}

export interface FakeUpstream {
  name: string;
  url: string;
  requests: RecordedRequest[];
  /** Requests whose client disconnected before the response finished. */
  aborted: number;
  behave(behaviour: FakeBehaviour): void;
  close(): Promise<void>;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeUpstream(name: string, initial: FakeBehaviour = {}): Promise<FakeUpstream> {
  let behaviour = initial;
  const fake = { name, url: '', requests: [] as RecordedRequest[], aborted: 0 } as FakeUpstream;

  const server = createServer(async (req, res) => {
    const b = behaviour;
    res.once('close', () => {
      if (!res.writableFinished) fake.aborted++;
    });
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      // Large uploads are only counted, so a test can send more than it would want held in memory.
      if (bytes < 1024 * 1024) chunks.push(chunk);
      if (b.readDelayMs) await wait(b.readDelayMs);
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const record = { method: req.method!, path: req.url!, headers: req.headers, body, bytes };
    fake.requests.push(record);
    if (b.hang) return;
    if (b.delayMs) await wait(b.delayMs);
    if (b.status && b.status >= 400) return sendError(res, b);
    await answer(req, res, record, b, name);
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

function sendError(res: ServerResponse, b: FakeBehaviour) {
  const type = b.status === 429 ? 'rate_limit_error' : b.status! >= 500 ? 'server_error' : 'invalid_request_error';
  res.writeHead(b.status!, { 'content-type': 'application/json', ...(b.headers ?? {}) });
  res.end(JSON.stringify({ error: { message: `fake upstream says ${b.status}`, type, param: null, code: b.status === 429 ? 'rate_limit_exceeded' : null } }));
}

async function answer(req: IncomingMessage, res: ServerResponse, record: RecordedRequest, b: FakeBehaviour, name: string) {
  const json = record.headers['content-type']?.includes('json') && record.body ? JSON.parse(record.body) : {};
  const path = record.path.replace(/\?.*$/, '');
  if (path.endsWith('/chat/completions')) return json.stream ? streamChat(res, json, b, name) : sendJson(res, chatCompletion(json, b, name));
  if (path.endsWith('/embeddings')) {
    const inputs = Array.isArray(json.input) ? json.input : [json.input];
    return sendJson(res, { object: 'list', model: json.model, data: inputs.map((_: unknown, index: number) => ({ object: 'embedding', index, embedding: [0.1, 0.2, 0.3] })), usage: { prompt_tokens: 3, total_tokens: 3 } });
  }
  if (path.endsWith('/responses')) {
    return sendJson(res, { id: `resp_${name}_${record.bytes}`, object: 'response', created_at: 1, status: 'completed', model: json.model, output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: b.text ?? `answer from ${name}`, annotations: [] }] }], usage: { input_tokens: 4, output_tokens: 5, total_tokens: 9 } });
  }
  if (path.endsWith('/audio/speech')) {
    const size = b.binaryBytes ?? 4096;
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': size });
    const block = Buffer.alloc(Math.min(size, 64 * 1024), 1);
    for (let sent = 0; sent < size; sent += block.length) if (!res.write(block.subarray(0, Math.min(block.length, size - sent)))) await new Promise((r) => res.once('drain', r));
    return res.end();
  }
  if (path.endsWith('/files') && req.method === 'POST') {
    return sendJson(res, { id: `file-${name}-${record.bytes}`, object: 'file', bytes: record.bytes, created_at: 1, filename: 'upload', purpose: 'batch', status: 'processed' });
  }
  return sendJson(res, { object: 'echo', upstream: name, method: record.method, path: record.path, model: json.model ?? null });
}

function sendJson(res: ServerResponse, value: unknown) {
  const text = JSON.stringify(value);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function chatCompletion(json: { model: string }, b: FakeBehaviour, name: string) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1,
    model: json.model,
    choices: [{ index: 0, message: { role: 'assistant', content: b.text ?? `answer from ${name}`, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  };
}

async function streamChat(res: ServerResponse, json: { model: string; stream_options?: { include_usage?: boolean } }, b: FakeBehaviour, name: string) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const count = b.chunks ?? 5;
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: json.model };
  const send = (value: unknown) => res.write(`data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`);
  send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  for (let i = 0; i < count; i++) {
    if (b.resetAfterChunks !== undefined && i === b.resetAfterChunks) {
      // Let what was written reach the wire first: a reset drops unflushed writes.
      await wait(20);
      return res.socket?.destroy();
    }
    if (b.stallAfterChunks !== undefined && i === b.stallAfterChunks) return;
    if (b.chunkIntervalMs) await wait(b.chunkIntervalMs);
    if (res.destroyed) return;
    send({ ...base, choices: [{ index: 0, delta: { content: `${name}-${i} ` }, finish_reason: null }] });
  }
  send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  if (json.stream_options?.include_usage) send({ ...base, choices: [], usage: { prompt_tokens: 11, completion_tokens: count, total_tokens: 11 + count } });
  send('[DONE]');
  res.end();
}
