// The Messages API's answer from an Anthropic upstream, relayed as it came (routes/messages.ts sends
// Claude's own clients' requests to Claude untranslated): JSON bytes as they are, an event stream with
// the event-stream writer's backpressure, timeouts and in-band errors, once the fallback held it until
// its first content (messages-hold.ts). Only the usage is read, from the answer's `usage` or the
// stream's message_start and message_delta, in OpenAI's meaning for limits, prices and metrics: input
// includes cache reads and writes, which Anthropic reports apart.
import { ApiError } from '../http/errors.ts';
import type { Exchange, Usage } from '../exchange/exchange.ts';
import { noteFacts } from './answer-facts.ts';
import { writeEventStream } from './event-stream.ts';
import type { Answer } from './fallback.ts';
import { readText } from './relay.ts';
import type { ResponseSink } from './sink.ts';
import type { SseRelay } from './sse-relay.ts';
import { scrub, upstreamTimeout } from './upstream-error.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';

const MAX_JSON_ANSWER = 64 * 1024 * 1024;
/** A stream's events are read for usage only up to this size each (a huge text delta carries none). */
const MAX_READ_EVENT = 64 * 1024;

type AnthropicUsage = { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null };

export function usageOfAnthropic(usage: AnthropicUsage, into: Usage | null = null): Usage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const input = usage.input_tokens === undefined ? null : usage.input_tokens + cacheRead + (usage.cache_creation_input_tokens ?? 0);
  const out: Usage = { inputTokens: input ?? into?.inputTokens ?? 0, outputTokens: usage.output_tokens ?? into?.outputTokens ?? 0 };
  const cached = usage.input_tokens === undefined ? into?.cachedInputTokens : cacheRead;
  if (cached) out.cachedInputTokens = cached;
  return out;
}

const STOP_REASONS: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter' };

export async function relayAnthropicMessages(exchange: Exchange, sink: ResponseSink, answer: Answer): Promise<void> {
  const { response, attempt, record } = answer;
  const contentType = String(response.headers['content-type'] ?? '');
  exchange.modelAnswered = attempt.upstreamModel;
  sink.status(response.statusCode);
  for (const name of ['request-id', 'anthropic-organization-id']) {
    const value = response.headers[name];
    if (typeof value === 'string') sink.header(name, value);
  }
  if (contentType.startsWith('text/event-stream')) {
    sink.header('Cache-Control', 'no-cache');
    sink.header('X-Accel-Buffering', 'no');
    sink.type(contentType);
    exchange.stream = true;
    const relay = usageReadingRelay(exchange);
    // The opening the hold read (messages-hold.ts) goes out first, as it came; the body goes on from there.
    const opening = answer.heldBytes ? { out: relay.feed(answer.heldBytes.bytes), ended: answer.heldBytes.ended } : undefined;
    writeEventStream(sink.takeOver(), exchange, record, response.body, relay, opening);
    return;
  }
  let text: string;
  try {
    text = await readText(response.body, MAX_JSON_ANSWER);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (bodyTimeoutOf(error) || exchange.abortReason === 'timeout') throw upstreamTimeout(`'${attempt.upstream.metadata.name}'`);
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as { usage?: AnthropicUsage; stop_reason?: string };
    if (parsed.usage) exchange.usage = usageOfAnthropic(parsed.usage);
    if (parsed.stop_reason) noteFacts(exchange, { finishReasons: [{ index: 0, reason: STOP_REASONS[parsed.stop_reason] ?? parsed.stop_reason }] });
  } catch {
    throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${attempt.upstream.metadata.name}' sent a malformed JSON answer.`);
  }
  for (const secret of [answer.secret, ...answer.secrets]) text = scrub(text, secret);
  sink.type(contentType || 'application/json');
  sink.send(Buffer.from(text));
}

/** Passes the stream's bytes through unchanged, reading message_start and message_delta for usage. */
function usageReadingRelay(exchange: Exchange): SseRelay {
  let pending = '';
  const read = (frame: string) => {
    const data = /^data: ?(.*)$/m.exec(frame)?.[1];
    if (!data || data.length > MAX_READ_EVENT || !/"(message_start|message_delta)"/.test(data)) return;
    try {
      const event = JSON.parse(data);
      const usage = event.type === 'message_start' ? event.message?.usage : event.usage;
      if (usage) exchange.usage = usageOfAnthropic(usage, exchange.usage);
      const stop = event.delta?.stop_reason;
      if (typeof stop === 'string') noteFacts(exchange, { finishReasons: [{ index: 0, reason: STOP_REASONS[stop] ?? stop }] });
    } catch {}
  };
  return {
    feed(chunk) {
      pending += chunk.toString('utf8');
      let end: number;
      while ((end = pending.search(/\r?\n\r?\n/)) !== -1) {
        read(pending.slice(0, end));
        pending = pending.slice(end).replace(/^(\r?\n)+/, '');
      }
      // A frame past the read limit is not kept: its bytes have gone out already.
      if (pending.length > MAX_READ_EVENT * 2) pending = '';
      return chunk;
    },
    end: () => null,
    cut: () => null,
    // Anthropic's own error event, which its SDKs and Claude Code raise.
    errorEvent: ({ message, code }) => `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: code === 'server_shutting_down' ? 'overloaded_error' : code.includes('timeout') ? 'timeout_error' : 'api_error', message } })}\n\n`,
  };
}
