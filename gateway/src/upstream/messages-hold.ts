// The Messages API relayed to Anthropic (messages-relay.ts) is held until its first content, as a
// translated stream is (ADR 37, first-content.ts): Anthropic may answer 200, send message_start, and
// then an `overloaded_error` event before any content. Until content comes the client has seen
// nothing, so that is the attempt failing, and the model's next target (another key, another region)
// may still answer. The hold keeps the stream's bytes as they came, chunk by chunk, for the relay to
// write first, untouched: the relay stays byte-exact. It reads the events only to tell the opening
// from the content.
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import { ProviderStreamError } from '../providers/provider.ts';
import { streamError } from '../providers/anthropic/errors.ts';
import type { VetAnswer } from './fallback.ts';
import { holdUntilContent, MAX_HOLD_MS, rejectionOf, type OpeningWatch } from './first-content.ts';
import { settingsOf } from './settings.ts';

/**
 * Most bytes held before the first content. Anthropic's opening (message_start, a ping, an empty
 * block's start) is a few hundred bytes; an upstream that sends more without content gets its stream
 * relayed from there on, committed to this target, rather than held in memory without bound.
 */
export const MAX_HELD_BYTES = 256 * 1024;

/**
 * The fallback's vet of a relayed Messages stream: held until its first content, at most the
 * upstream's first-byte timeout (and MAX_HOLD_MS) after its head. A failure before then (an error
 * event, a cut, an idle body) rejects the attempt as the same error as a status would.
 */
export function anthropicRelayVet(subject: string): VetAnswer {
  return async (answer) => {
    if (!String(answer.response.headers['content-type'] ?? '').startsWith('text/event-stream')) return null;
    const holdMs = Math.min(settingsOf(answer.attempt.upstream).firstByteMs, MAX_HOLD_MS);
    const opening = new MessagesOpening();
    const first = await holdUntilContent(answer.response.body, opening, holdMs, answer.record);
    if (first.kind === 'content') {
      answer.heldBytes = { bytes: opening.bytes(), ended: first.ended };
      return null;
    }
    return rejectionOf(first.error, answer.attempt.upstream.metadata.name, subject, [answer.secret, ...answer.secrets]);
  };
}

/**
 * Reads a Messages stream's opening. Not content: message_start, ping, comments, and the start of a
 * text or thinking block that is still empty (Anthropic opens every text block with `"text": ""`).
 * Content: any block delta, a block's stop, the start of a block that carries something itself (a
 * tool_use with its name, a redacted_thinking block), message_delta (the stop reason), message_stop,
 * and any event type added to the API later (what the gateway cannot judge, it does not throw away).
 * An `error` event before content is a failure; so is a body that ends without content.
 */
export class MessagesOpening implements OpeningWatch {
  #chunks: Buffer[] = [];
  #size = 0;
  #decoder = new StringDecoder('utf8');
  #events: EventSourceMessage[] = [];
  #parser: EventSourceParser = createParser({ onEvent: (event) => this.#events.push(event) });

  feed(chunk: Buffer): boolean {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    this.#parser.feed(this.#decoder.write(chunk));
    if (this.#sawContent()) return true;
    return this.#size > MAX_HELD_BYTES;
  }

  end(): void {
    // A last event without its blank line still counts.
    this.#parser.feed(`${this.#decoder.end()}\n\n`);
    if (this.#sawContent()) return;
    throw new ProviderStreamError("Anthropic's stream ended before its first content: the answer is incomplete.", 'upstream_stream_truncated');
  }

  /** The bytes read, in order, as one buffer. */
  bytes(): Buffer {
    return this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#size);
  }

  #sawContent(): boolean {
    const events = this.#events;
    this.#events = [];
    for (const event of events) {
      // Anthropic names every event; its data's `type` says the same.
      const type = event.event ?? parsed(event.data)?.type;
      if (type === 'error') throw streamError(event.data);
      if (type === 'message_start' || type === 'ping') continue;
      if (type === 'content_block_start' && emptyBlock(parsed(event.data)?.content_block)) continue;
      return true;
    }
    return false;
  }
}

function parsed(data: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(data);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function emptyBlock(block: unknown): boolean {
  if (!block || typeof block !== 'object') return false;
  const b = block as Record<string, unknown>;
  return (b.type === 'text' && b.text === '') || (b.type === 'thinking' && b.thinking === '');
}
