// Relays an upstream event stream event by event, as it arrives. Each event's data is forwarded
// untouched unless the gateway has a reason to change it: the public model name differs from the
// upstream's, or the usage chunk was requested by the gateway (for accounting) and not by the client.
import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceParser } from 'eventsource-parser';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

export interface RelayOptions {
  kind: 'chat' | 'responses' | 'other';
  publicModel: string;
  upstreamModel: string;
  /** Drop the chat usage chunk (`choices: []` + usage) that only the gateway asked for. */
  stripUsageChunk: boolean;
  onUsage(usage: Usage): void;
  /** Responses streams: the id from response.created, so continuations can find their upstream. */
  onResponseId?(id: string): void;
  /** Sees each event's data as the upstream sent it (to learn the ids of objects a run creates). */
  onEventData?(data: string): void;
}

export function usageFromChat(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  if (typeof u.prompt_tokens === 'number') return { inputTokens: u.prompt_tokens, outputTokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0 };
  if (typeof u.input_tokens === 'number') return { inputTokens: u.input_tokens, outputTokens: typeof u.output_tokens === 'number' ? u.output_tokens : 0 };
  return null;
}

export class SseRelay extends Transform {
  #decoder = new StringDecoder('utf8');
  #parser: EventSourceParser;
  #options: RelayOptions;
  #rename: boolean;

  constructor(options: RelayOptions) {
    super();
    this.#options = options;
    this.#rename = options.publicModel !== options.upstreamModel;
    this.#parser = createParser({
      onEvent: (event) => {
        this.#options.onEventData?.(event.data);
        const data = this.#rewrite(event.data);
        if (data === null) return;
        this.push(`${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`);
      },
      onComment: (comment) => this.push(`:${comment}\n\n`),
    });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#parser.feed(this.#decoder.write(chunk));
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.#parser.feed(`${this.#decoder.end()}\n\n`);
    callback();
  }

  /** Returns the data to forward, or null to drop the event. Parses JSON only when it must. */
  #rewrite(data: string): string | null {
    if (data === '[DONE]') return data;
    const mentionsUsage = data.includes('"usage"');
    const created = this.#options.kind === 'responses' && data.includes('"response.created"');
    if (!this.#rename && !mentionsUsage && !created) return data;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(data);
    } catch {
      return data;
    }
    const { kind } = this.#options;
    if (created) {
      const id = (event.response as Record<string, unknown> | undefined)?.id;
      if (typeof id === 'string') this.#options.onResponseId?.(id);
    }
    if (mentionsUsage) {
      const usage = kind === 'responses' ? usageFromChat((event.response as Record<string, unknown> | undefined)?.usage) : usageFromChat(event.usage);
      if (usage) this.#options.onUsage(usage);
      if (kind === 'chat' && this.#options.stripUsageChunk) {
        if (Array.isArray(event.choices) && event.choices.length === 0) return null;
        if ('usage' in event) {
          delete event.usage;
          if (!this.#rename) return JSON.stringify(event);
        }
      }
    }
    if (!this.#rename) return data;
    if (typeof event.model === 'string') event.model = this.#options.publicModel;
    const response = event.response as Record<string, unknown> | undefined;
    if (response && typeof response.model === 'string') response.model = this.#options.publicModel;
    return JSON.stringify(event);
  }
}
