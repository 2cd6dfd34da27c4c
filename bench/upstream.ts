// The bench's fake OpenAI upstream, run as its own process so its CPU is not charged to the proxy
// under test. It is built to be cheap: answers are pre-serialised per model and reused, and bodies
// over 1 MB (the vision request) are counted rather than parsed. The model name chooses the
// behaviour, so the floor proxy (which never parses) and Tollgate send the very same request:
//   bench            answer at once; a stream has 20 chunks
//   bench-d50        wait 50 ms before answering (the fixed-delay variant)
//   bench-c64-i20    a stream of 64 chunks, 20 ms apart
// It also answers Anthropic's Messages API (POST /v1/messages, key in x-api-key), with the same text
// and chunk counts, for the translated scenarios: Tollgate's anthropic provider against its relay.
// Each content chunk carries its sequence number ("0 ", "1 ", …) so clients can check order and count,
// and the time it was written (bench_sent_us) so they can time its way through the proxy.
// The Authorization header must carry the upstream secret: proof that a proxy replaced the client's.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const SECRET = process.env.BENCH_UPSTREAM_KEY ?? 'bench-upstream-secret';
const EXPECTED_AUTH = `Bearer ${SECRET}`;
const PARSE_LIMIT = 1024 * 1024;
const CREATED = 1735689600;
const EMBEDDING_DIMENSIONS = 1536;

interface Behaviour {
  delayMs: number;
  chunks: number;
  intervalMs: number;
}

const behaviours = new Map<string, Behaviour>();
function behaviourOf(model: string): Behaviour {
  let b = behaviours.get(model);
  if (!b) {
    const delay = /-d(\d+)/.exec(model);
    const chunks = /-c(\d+)/.exec(model);
    const interval = /-i(\d+)/.exec(model);
    b = { delayMs: delay ? Number(delay[1]) : 0, chunks: chunks ? Number(chunks[1]) : 20, intervalMs: interval ? Number(interval[1]) : 0 };
    behaviours.set(model, b);
  }
  return b;
}

const chatAnswers = new Map<string, Buffer>();
function chatAnswer(model: string): Buffer {
  let answer = chatAnswers.get(model);
  if (!answer) {
    const content = 'This is the bench upstream answering with a short, fixed completion of about forty tokens, so that the JSON is the size of a typical short chat answer.';
    answer = Buffer.from(
      JSON.stringify({
        id: 'chatcmpl-bench',
        object: 'chat.completion',
        created: CREATED,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 25, completion_tokens: 40, total_tokens: 65 },
        system_fingerprint: 'fp_bench',
      }),
    );
    chatAnswers.set(model, answer);
  }
  return answer;
}

const embeddingAnswers = new Map<string, Buffer>();
function embeddingAnswer(model: string): Buffer {
  let answer = embeddingAnswers.get(model);
  if (!answer) {
    // Deterministic values with the digits a real answer has (about 20 bytes each: ~30 KB in all).
    const embedding = Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => Number((Math.sin(i * 12.9898) * 0.05).toFixed(9)));
    answer = Buffer.from(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding }], model, usage: { prompt_tokens: 8, total_tokens: 8 } }));
    embeddingAnswers.set(model, answer);
  }
  return answer;
}

/** With include_usage on, OpenAI puts `"usage":null` on every chunk before the usage chunk; so does this upstream. */
function chunk(model: string, i: number, last: boolean, includeUsage: boolean): string {
  const delta = i === 0 ? `{"role":"assistant","content":"${i} "}` : last ? '{}' : `{"content":"${i} "}`;
  // bench_sent_us: when the chunk left, on the monotonic clock every process here shares, so a client
  // can time each chunk's way through the proxy (proxies forward unknown fields untouched).
  const sent = process.hrtime.bigint() / 1000n;
  return `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${CREATED},"model":"${model}","system_fingerprint":"fp_bench","bench_sent_us":${sent},"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${last ? '"stop"' : 'null'}}]${includeUsage ? ',"usage":null' : ''}}\n\n`;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function stream(res: ServerResponse, model: string, b: Behaviour, includeUsage: boolean): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  // Content chunks 0..n-1, then the finish chunk: n+1 events, then the usage chunk if asked, then [DONE].
  for (let i = 0; i <= b.chunks; i++) {
    if (b.intervalMs && i > 0) await wait(b.intervalMs);
    if (res.destroyed) return;
    res.write(chunk(model, i, i === b.chunks, includeUsage));
  }
  if (includeUsage) {
    res.write(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${CREATED},"model":"${model}","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":${b.chunks},"total_tokens":${25 + b.chunks}}}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

function send(res: ServerResponse, status: number, body: Buffer | string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const messageAnswers = new Map<string, Buffer>();
function messageAnswer(model: string): Buffer {
  let answer = messageAnswers.get(model);
  if (!answer) {
    const text = 'This is the bench upstream answering with a short, fixed completion of about forty tokens, so that the JSON is the size of a typical short chat answer.';
    answer = Buffer.from(JSON.stringify({ id: 'msg_bench', type: 'message', role: 'assistant', model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 25, output_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } }));
    messageAnswers.set(model, answer);
  }
  return answer;
}

/** Anthropic's stream: message_start, one text block of n deltas, message_delta, message_stop. */
async function messageStream(res: ServerResponse, model: string, b: Behaviour): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;
  res.write(event('message_start', `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"${model}","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`) + event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'));
  for (let i = 0; i < b.chunks; i++) {
    if (b.intervalMs && i > 0) await wait(b.intervalMs);
    if (res.destroyed) return;
    res.write(event('content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${i} "},"bench_sent_us":${process.hrtime.bigint() / 1000n}}`));
  }
  res.end(event('content_block_stop', '{"type":"content_block_stop","index":0}') + event('message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":${b.chunks}}}`) + event('message_stop', '{"type":"message_stop"}'));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    bytes += c.length;
    if (bytes <= PARSE_LIMIT) chunks.push(c);
  }
  const anthropic = (req.url ?? '').endsWith('/v1/messages');
  if (anthropic ? req.headers['x-api-key'] !== SECRET : req.headers.authorization !== EXPECTED_AUTH) return send(res, 401, '{"error":{"message":"bench upstream: wrong credential","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}');
  let body: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } } = {};
  if (bytes <= PARSE_LIMIT) {
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, '{"error":{"message":"bench upstream: invalid JSON","type":"invalid_request_error","param":null,"code":"invalid_json"}}');
    }
  } else {
    body = { model: 'bench' };
  }
  const model = typeof body.model === 'string' ? body.model : 'bench';
  const b = behaviourOf(model);
  if (b.delayMs) await wait(b.delayMs);
  const url = req.url ?? '';
  if (url.endsWith('/embeddings')) return send(res, 200, embeddingAnswer(model));
  if (anthropic) return body.stream ? messageStream(res, model, b) : send(res, 200, messageAnswer(model));
  if (url.endsWith('/chat/completions')) {
    if (body.stream) return stream(res, model, b, body.stream_options?.include_usage === true);
    return send(res, 200, chatAnswer(model));
  }
  send(res, 404, '{"error":{"message":"bench upstream: unknown path","type":"invalid_request_error","param":null,"code":"unknown_url"}}');
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  handle(req, res).catch(() => res.destroy());
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ ready: true, port });
  if (!process.send) console.log(`bench upstream on http://127.0.0.1:${port}/v1`);
});
process.on('disconnect', () => process.exit(0));
// A normal exit, so that --cpu-prof (bench --profile) writes its profile.
process.on('SIGTERM', () => process.exit(0));
