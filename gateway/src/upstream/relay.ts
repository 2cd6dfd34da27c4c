// Relays an upstream answer that the gateway has decided to keep: event streams as they arrive (one
// write per upstream read), JSON as the bytes that came (usage read from the end of the answer; parsed
// whole only when it must be), anything else streamed through as bytes. Every path keeps Node's
// backpressure: a client that reads slowly slows the upstream read down with it.
import type { Readable } from 'node:stream';
import { ApiError } from '../http/errors.ts';
import { sinceAttempt, type Exchange, type UpstreamAttempt } from '../exchange/exchange.ts';
import { writeEventStream } from './event-stream.ts';
import type { Answer } from './fallback.ts';
import { keepStreamed } from '../telemetry/content-capture.ts';
import { factsOfObject, noteFacts, scanAnswerBytes } from './answer-facts.ts';
import { parseObjectTail, withTail } from './json-answer.ts';
import type { ResponseSink } from './sink.ts';
import { createSseRelay, usageFromChat } from './sse-relay.ts';
import { scrub, upstreamTimeout } from './upstream-error.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';

export interface RelayOptions {
  /** The model name clients know; null when the request named none (nothing to rewrite). */
  publicModel: string | null;
  streamKind?: 'chat' | 'responses' | 'other';
  stripUsageChunk: boolean;
  /** Stream the body through untouched whatever its type (file content may be labelled JSON). */
  raw?: boolean;
  onAnswered?: (upstream: string, json: unknown) => void;
  onResponseId?: (upstream: string, id: string) => void;
  /** Sees the data of every event of a relayed stream (ids of objects created by a run, say). */
  onEventData?: (upstream: string, data: string) => void;
  /** Largest single event of a relayed stream (TOLLGATE_MAX_SSE_EVENT_BYTES). */
  maxEventBytes?: number;
}

const BINARY_HEADERS = new Set(['content-type', 'content-disposition']);
const MAX_JSON_ANSWER = 64 * 1024 * 1024;
/** JSON answers smaller than this are parsed whole (a few microseconds); larger ones only at their end. */
const WHOLE_PARSE_BELOW = 16 * 1024;
const USAGE = ['usage'];
const USAGE_AND_MODEL = ['usage', 'model'];

export async function relayAnswer(exchange: Exchange, sink: ResponseSink, answer: Answer, options: RelayOptions): Promise<void> {
  const { response, attempt, record, secret } = answer;
  const upstreamName = attempt.upstream.metadata.name;
  const contentType = String(response.headers['content-type'] ?? 'application/octet-stream');
  const upstreamModel = attempt.upstreamModel ?? options.publicModel ?? '';
  const publicModel = options.publicModel ?? upstreamModel;
  sink.status(response.statusCode);

  if (!options.raw && contentType.startsWith('text/event-stream')) {
    sink.header('Cache-Control', 'no-cache');
    sink.header('X-Accel-Buffering', 'no');
    sink.type(contentType);
    const relay = createSseRelay({
      kind: options.streamKind ?? 'other',
      publicModel,
      upstreamModel,
      stripUsageChunk: options.stripUsageChunk,
      onUsage: (usage) => (exchange.usage = usage),
      onFacts: (facts) => noteFacts(exchange, facts),
      onResponseId: options.onResponseId && ((id) => options.onResponseId!(upstreamName, id)),
      onEventData: eventDataHook(exchange, upstreamName, options.onEventData),
      maxEventBytes: options.maxEventBytes,
    });
    exchange.stream = true;
    writeEventStream(sink.takeOver(), exchange, record, response.body, relay);
    return;
  }

  if (!options.raw && contentType.includes('json')) {
    let answer: Buffer;
    try {
      answer = await readBytes(response.body, MAX_JSON_ANSWER, record);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (bodyTimeoutOf(error) || exchange.abortReason === 'timeout') throw upstreamTimeout(`'${upstreamName}'`);
      if (exchange.aborted) throw error;
      throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${upstreamName}' broke off its answer before it was complete.`);
    }
    const rename = publicModel !== upstreamModel;
    // What a client receives labelled JSON is checked to be JSON this far: answers under 16 KB, and
    // answers that onAnswered must see, are parsed whole. A larger one is forwarded unparsed only when
    // it is an object whose end, from its last top-level `usage` (or `model`) key to its closing
    // brace, parses as members of that object (json-answer.ts): an empty, HTML, truncated or cut-off
    // answer fails that; corruption in the middle of a large answer with both ends intact does not.
    // Anything else is parsed whole, and a malformed answer is a 502.
    // Message contents switched on for this request: the answer is parsed whole to be recorded.
    const tail = options.onAnswered || exchange.content || answer.length < WHOLE_PARSE_BELOW ? null : parseObjectTail(answer, rename ? USAGE_AND_MODEL : USAGE);
    let body = answer;
    if (tail) {
      const usage = usageFromChat(tail.members.usage);
      if (usage) exchange.usage = usage;
      noteFacts(exchange, scanAnswerBytes(answer, options.streamKind ?? 'other', tail.members.model));
      if (rename && typeof tail.members.model === 'string') {
        tail.members.model = publicModel;
        body = withTail(answer, tail);
      }
    } else {
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer.toString('utf8'));
      } catch {
        throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${upstreamName}' sent a malformed JSON answer.`);
      }
      const object = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
      const usage = usageFromChat(object?.usage);
      if (usage) exchange.usage = usage;
      if (object) noteFacts(exchange, factsOfObject(object, options.streamKind ?? 'other'));
      if (exchange.content) exchange.content.output = object;
      options.onAnswered?.(upstreamName, parsed);
      if (object && typeof object.model === 'string' && rename) {
        object.model = publicModel;
        body = Buffer.from(JSON.stringify(object));
      }
    }
    sink.type('application/json');
    sink.send(scrubBytes(body, secret));
    return;
  }

  // Binary answers (audio, transcripts as text, file content): streamed through with their own type and length.
  for (const [name, value] of Object.entries(response.headers)) {
    if ((BINARY_HEADERS.has(name) || name.startsWith('openai-')) && value !== undefined) sink.header(name, String(value));
  }
  // The bytes are the upstream's (or a client's upload), never a page of this origin.
  sink.header('X-Content-Type-Options', 'nosniff');
  sink.pipe(response.body, response.headers['content-length'] ? Number(response.headers['content-length']) : undefined);
}

/** The relay's per-event hook: the caller's, and with message contents switched on, the capture (which makes the relay parse events). */
function eventDataHook(exchange: Exchange, upstream: string, own: RelayOptions['onEventData']): ((data: string) => void) | undefined {
  const content = exchange.content;
  if (!content) return own && ((data) => own(upstream, data));
  return (data) => {
    own?.(upstream, data);
    keepStreamed(content, data);
  };
}

/** Reads a small upstream body (an error, a JSON answer), refusing one past `limit`. */
export async function readText(body: Readable, limit: number): Promise<string> {
  return (await readBytes(body, limit)).toString('utf8');
}

/** Events rather than for-await: an async iterator per answer costs a promise per chunk and its own set-up. */
function readBytes(body: Readable, limit: number, record?: UpstreamAttempt): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      if (size === 0 && record && record.firstByteMs === null) record.firstByteMs = sinceAttempt(record);
      size += chunk.length;
      if (size > limit) {
        body.destroy();
        reject(new ApiError(502, 'upstream_invalid_response', 'The upstream answer was larger than the gateway accepts.'));
        return;
      }
      chunks.push(chunk);
    });
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    body.on('error', reject);
  });
}

/** The upstream credential must never reach a client: searched in the bytes, decoded only when present. */
function scrubBytes(bytes: Buffer, secret: string | null): Buffer {
  return secret && bytes.indexOf(secret) !== -1 ? Buffer.from(scrub(bytes.toString('utf8'), secret)) : bytes;
}
