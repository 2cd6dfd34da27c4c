// Relays an upstream event stream as it arrives, one output write per upstream read. Each event goes
// out untouched unless the gateway has a reason to change it: the public model name differs from the
// upstream's, or the usage chunk was requested by the gateway (for accounting) and not by the client.
// When nothing is renamed and no hook needs every event, the bytes pass through as they came and only
// the frames that mention usage (or carry a Responses id) are decoded (sse-frames.ts); otherwise every
// event is parsed and written anew.
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { factsOfObject, factsOfResponseEvent, type AnswerFacts } from './answer-facts.ts';
import { EventTooLarge, lastFrameEnd, SseFrames, type LineState } from './sse-frames.ts';

/** The exchange's usage record (cached input, reasoning output and audio seconds kept for pricing). */
export type { Usage } from '../exchange/exchange.ts';
import type { Usage } from '../exchange/exchange.ts';

export interface RelayOptions {
  kind: 'chat' | 'responses' | 'other';
  publicModel: string;
  upstreamModel: string;
  /** Drop the chat usage chunk (`choices: []` + usage) that only the gateway asked for. */
  stripUsageChunk: boolean;
  onUsage(usage: Usage): void;
  /** The model the upstream names and why choices stopped, from the events already inspected (telemetry). */
  onFacts?(facts: AnswerFacts | null): void;
  /** Responses streams: the id from response.created, so continuations can find their upstream. */
  onResponseId?(id: string): void;
  /** Sees each event's data as the upstream sent it (to learn the ids of objects a run creates). */
  onEventData?(data: string): void;
  /** Largest event accepted; a larger one makes feed() throw EventTooLarge (none of it is sent). */
  maxEventBytes?: number;
}

/** Turns upstream reads into what the client is sent: one Buffer or string per read, or null for nothing yet. */
export interface SseRelay {
  feed(chunk: Buffer): Buffer | string | null;
  /** What is left when the upstream has ended (an unterminated last event, completed). */
  end(): Buffer | string | null;
  /** The upstream broke off: what must be written before an in-band error event so that it stands alone. */
  cut(): Buffer | string | null;
  /** The in-band error event in the stream's own dialect (default: OpenAI's `data: {"error":…}`). */
  errorEvent?(error: { message: string; type: string; code: string }): string;
}

export function createSseRelay(options: RelayOptions): SseRelay {
  return options.publicModel === options.upstreamModel && !options.onEventData ? new PassThroughRelay(options) : new ParsingRelay(options);
}

export function usageFromChat(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  if (typeof u.prompt_tokens === 'number') return withDetails({ inputTokens: u.prompt_tokens, outputTokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0 }, u.prompt_tokens_details, u.completion_tokens_details);
  if (typeof u.input_tokens === 'number') return withDetails({ inputTokens: u.input_tokens, outputTokens: typeof u.output_tokens === 'number' ? u.output_tokens : 0 }, u.input_tokens_details, u.output_tokens_details);
  // A transcription's or translation's usage by duration (whisper-1): `{"type":"duration","seconds":N}`.
  if (u.type === 'duration' && typeof u.seconds === 'number') return { inputTokens: 0, outputTokens: 0, audioSeconds: u.seconds };
  return null;
}

/** Cached input and reasoning output, as OpenAI details them (Chat: prompt/completion_tokens_details; Responses: input/output_tokens_details). */
function withDetails(usage: Usage, input: unknown, output: unknown): Usage {
  const cached = (input as Record<string, unknown> | null | undefined)?.cached_tokens;
  const reasoning = (output as Record<string, unknown> | null | undefined)?.reasoning_tokens;
  if (typeof cached === 'number' && cached > 0) usage.cachedInputTokens = cached;
  if (typeof reasoning === 'number' && reasoning > 0) usage.reasoningTokens = reasoning;
  return usage;
}

/**
 * True when every `"usage"` key in the text has the value null. With include_usage on, OpenAI puts
 * `"usage":null` on every chunk before the last: those chunks carry nothing to read or hide and
 * must stay on the pass-through path. Works on a frame's bytes and on an event's data alike.
 */
export function onlyNullUsage(text: Buffer | string): boolean {
  const bytes = typeof text === 'string' ? null : text;
  const at = (needle: string, from: number) => (bytes ? bytes.indexOf(needle, from) : (text as string).indexOf(needle, from));
  const charAt = (i: number) => (bytes ? bytes[i] : (text as string).charCodeAt(i));
  const length = text.length;
  for (let found = at('"usage"', 0); found !== -1; found = at('"usage"', found + 7)) {
    let i = found + 7;
    while (i < length && isJsonSpace(charAt(i))) i++;
    if (charAt(i) !== 0x3a) return false; // a `"usage"` that is a value, not a key: look closer
    i++;
    while (i < length && isJsonSpace(charAt(i))) i++;
    if (charAt(i) !== 0x6e || charAt(i + 1) !== 0x75 || charAt(i + 2) !== 0x6c || charAt(i + 3) !== 0x6c) return false; // "null"
  }
  return true;
}

function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

// `usage"` rather than `"usage"`: Buffer#indexOf scans for a short needle's first byte with memchr,
// and a quote comes every few bytes of JSON where a `u` does not (7× faster on a chat stream). A
// frame it finds without `"usage"` is inspected for nothing and passes unchanged.
const USAGE = Buffer.from('usage"');
const CREATED = Buffer.from('"response.created"');
// A chunk whose finish_reason is a string (not null): a choice's last. `_` is as rare in JSON as `u`.
const FINISH = Buffer.from('_reason":"');
// A Responses stream that fails ends with this event, whose usage is usually null: its status is the
// answer's finish reason all the same.
const FAILED = Buffer.from('"response.failed"');

/** A loop, not `some` with a closure: this runs for every frame of a stream with `include_usage` on. */
function includesAny(frame: Buffer, needles: readonly Buffer[]): boolean {
  for (const needle of needles) if (frame.includes(needle)) return true;
  return false;
}

class PassThroughRelay implements SseRelay {
  #frames: SseFrames;
  #rewrite: EventRewriter;
  /** What makes a frame worth inspecting besides non-null usage. */
  #watched: readonly Buffer[];
  #needles: readonly Buffer[];

  constructor(options: RelayOptions) {
    this.#rewrite = new EventRewriter(options);
    const watched: Buffer[] = [];
    if (options.kind === 'responses' && options.onResponseId !== undefined) watched.push(CREATED);
    if (options.kind === 'responses' && options.onFacts !== undefined) watched.push(FAILED);
    if (options.kind === 'chat' && options.onFacts !== undefined) watched.push(FINISH);
    this.#watched = watched;
    this.#needles = [USAGE, ...watched];
    this.#frames = new SseFrames(
      {
        needles: () => this.#needles,
        inspect: (frame) => this.#inspect(frame),
      },
      options.maxEventBytes,
    );
  }

  feed(chunk: Buffer): Buffer | null {
    return this.#frames.feed(chunk);
  }

  end(): Buffer | null {
    return this.#frames.end();
  }

  cut(): Buffer | null {
    return this.#frames.cut();
  }

  #inspect(frame: Buffer): Buffer | null | undefined {
    // The common case of a real OpenAI stream: `"usage":null` on a content chunk, nothing to do.
    if (onlyNullUsage(frame) && !includesAny(frame, this.#watched)) return undefined;
    const text = frame.toString('utf8');
    const lines = text.split(LINE_BREAK);
    const data = dataOf(lines);
    if (data === null) return undefined;
    if (this.#watched.includes(CREATED) && data.includes('"response.created"')) {
      // One per stream: later frames need not be searched for it.
      this.#watched = this.#watched.filter((needle) => needle !== CREATED);
      this.#needles = [USAGE, ...this.#watched];
    }
    const rewritten = this.#rewrite.apply(data);
    if (rewritten === null) return null;
    if (rewritten === data) return undefined;
    return Buffer.from(withData(lines, rewritten, lineEndingOf(text)));
  }
}

class ParsingRelay implements SseRelay {
  #decoder = new StringDecoder('utf8');
  #parser: EventSourceParser;
  #rewrite: EventRewriter;
  /** The events of the read being relayed: pushed as one string. */
  #out: string[] = [];
  #maxEvent: number;
  /** Bytes of the event not yet complete, and the line state where they end: the parser would buffer them without bound. */
  #pending = 0;
  #line: LineState = { lineEmpty: true, afterCR: false };

  constructor(options: RelayOptions) {
    this.#rewrite = new EventRewriter(options);
    this.#maxEvent = options.maxEventBytes ?? Infinity;
    this.#parser = createParser({
      onEvent: (event) => {
        options.onEventData?.(event.data);
        const data = this.#rewrite.apply(event.data);
        if (data === null) return;
        this.#out.push(`${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`);
      },
      onComment: (comment) => this.#out.push(`:${comment}\n\n`),
    });
  }

  feed(chunk: Buffer): string | null {
    if (this.#maxEvent !== Infinity) this.#checkSize(chunk);
    this.#parser.feed(this.#decoder.write(chunk));
    return this.#take();
  }

  end(): string | null {
    this.#parser.feed(`${this.#decoder.end()}\n\n`);
    return this.#take();
  }

  #checkSize(chunk: Buffer): void {
    const end = chunk.length === 0 ? -1 : lastFrameEnd(chunk, this.#line);
    this.#pending = end === -1 ? this.#pending + chunk.length : chunk.length - end;
    const last = chunk[chunk.length - 1];
    if (chunk.length > 0) this.#line = { lineEmpty: last === 0x0a || last === 0x0d, afterCR: last === 0x0d };
    if (this.#pending > this.#maxEvent) throw new EventTooLarge(this.#maxEvent);
  }

  /** Events are written whole here: an unfinished one was never sent. */
  cut(): null {
    return null;
  }

  #take(): string | null {
    if (this.#out.length === 0) return null;
    const text = this.#out.length === 1 ? this.#out[0] : this.#out.join('');
    this.#out = [];
    return text;
  }
}

/** What the gateway does to one event's data: read usage and the Responses id, drop or trim the usage chunk, rename the model. */
class EventRewriter {
  #options: RelayOptions;
  #rename: boolean;

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#rename = options.publicModel !== options.upstreamModel;
  }

  /** Returns the data to forward (the same string when unchanged), or null to drop the event. Parses JSON only when it must. */
  apply(data: string): string | null {
    if (data === '[DONE]') return data;
    const mentionsUsage = data.includes('"usage"') && !onlyNullUsage(data);
    const created = this.#options.kind === 'responses' && data.includes('"response.created"');
    const finishing =
      this.#options.onFacts !== undefined && (this.#options.kind === 'chat' ? data.includes('_reason":"') : this.#options.kind === 'responses' && data.includes('"response.failed"'));
    if (!this.#rename && !mentionsUsage && !created && !finishing) return data;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(data);
    } catch {
      return data;
    }
    if (!event || typeof event !== 'object') return data;
    const { kind } = this.#options;
    // Read before the model is renamed: telemetry wants the upstream's own name.
    if (this.#options.onFacts && (mentionsUsage || created || finishing)) this.#options.onFacts(kind === 'responses' ? factsOfResponseEvent(event) : factsOfObject(event, kind));
    if (created) {
      const id = (event.response as Record<string, unknown> | undefined)?.id;
      if (typeof id === 'string') this.#options.onResponseId?.(id);
    }
    if (mentionsUsage) {
      const usage = kind === 'responses' ? usageFromChat((event.response as Record<string, unknown> | undefined)?.usage) : usageFromChat(event.usage);
      if (usage) this.#options.onUsage(usage);
      // Only usage the gateway asked for is hidden: the final usage chunk (choices empty, usage set)
      // is dropped, usage on a content chunk removed. A chunk with empty choices and no usage (an
      // Azure prompt_filter_results chunk) is the client's and goes through.
      if (kind === 'chat' && this.#options.stripUsageChunk && usage) {
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

const LINE_BREAK = /\r\n|\r|\n/;

/** The data of one frame's lines (SSE field rules), or null when it has no data line (comments only). */
function dataOf(lines: string[]): string | null {
  let data: string | null = null;
  for (const line of lines) {
    const value = dataValue(line);
    if (value !== null) data = data === null ? value : `${data}\n${value}`;
  }
  return data;
}

function dataValue(line: string): string | null {
  if (!line.startsWith('data')) return null;
  if (line.length === 4) return '';
  if (line[4] !== ':') return null;
  return line[5] === ' ' ? line.slice(6) : line.slice(5);
}

/** The frame with its data lines replaced by `data`, other lines (event, id, comments) kept in place. */
function withData(lines: string[], data: string, eol: string): string {
  const out: string[] = [];
  let written = false;
  for (const line of lines) {
    if (line === '') continue;
    if (dataValue(line) === null) out.push(line);
    else if (!written) {
      written = true;
      for (const part of data.split('\n')) out.push(`data: ${part}`);
    }
  }
  return `${out.join(eol)}${eol}${eol}`;
}

function lineEndingOf(text: string): string {
  const lf = text.indexOf('\n');
  const cr = text.indexOf('\r');
  if (cr === -1) return '\n';
  return lf === cr + 1 ? '\r\n' : '\r';
}
