// An OpenAI chat stream (the SSE text any backend writes) turned into the Messages API's stream, as
// Claude Code and the Anthropic SDKs parse it: exactly one message_start, sent as soon as the stream
// starts (start(), before the backend's first token); one content block per logical block with
// sequential indices, each closed before the next opens (thinking, text, one per tool call keyed by
// OpenAI's tool index); tool input as input_json_delta; message_delta with the stop reason (tool_use
// whenever a tool was called) and usage; message_stop — also for a truncated turn; an `error` event
// when the backend failed mid-stream, and never a message_stop after it.
//
// OpenAI's stream may interleave what Anthropic's keeps apart: argument fragments of parallel tool
// calls routed by index in any order, or text between two fragments of a call. A tool's block cannot
// close before its last fragment (a later one would have nowhere to go: the bug of other gateways that
// lost tool input at a block switch), and that is known only when the turn ends. So once a tool block
// is open it stays open until the end, and whatever arrives for another block meanwhile is held, in
// the order it began, and written as blocks of their own after it. Held text is the model's answer,
// bounded as a JSON answer is: past the bound the stream ends with an error event, never silently short.
import { ChatEventReader, type ChatEvent } from '../chat-events.ts';
import { anthropicUsage, messageId, NO_STOP_SEQUENCES, stopOf, type StopSequences } from './response.ts';
import { toAnthropicToolId } from './tool-ids.ts';

type Json = Record<string, any>;
type BlockKind = 'thinking' | 'text' | 'tool_use';
/** A block that began while a tool block was open: written whole once that one closes. */
type HeldBlock = { kind: BlockKind; block: Json; parts: string[] };

const PING = sse('ping', { type: 'ping' });
/** Characters held behind an open tool block at most: as much as a whole JSON answer may be. */
const MAX_HELD_CHARS = 64 * 1024 * 1024;

export class ChatToMessagesStream {
  #model: string;
  #requestId: string;
  #inputEstimate: number;
  #events = new ChatEventReader();
  #started = false;
  #finished = false;
  #index = -1;
  #open: { kind: BlockKind; tool?: number } | null = null;
  #held: HeldBlock[] = [];
  #heldTools = new Map<number, HeldBlock>();
  #heldChars = 0;
  #maxHeldChars: number;
  #sawToolCall = false;
  #finishReason: string | null = null;
  #usage: Json | null = null;
  #stops: StopSequences;

  /** `inputEstimate`: the input tokens as the gateway estimated them, for message_start (the backend reports the real count at the end). */
  constructor(model: string, requestId: string, inputEstimate: number, maxHeldChars = MAX_HELD_CHARS, stops: StopSequences = NO_STOP_SEQUENCES) {
    this.#maxHeldChars = maxHeldChars;
    this.#stops = stops;
    this.#model = model;
    this.#requestId = requestId;
    this.#inputEstimate = inputEstimate;
  }

  /** OpenAI SSE text in (any split), Anthropic SSE text out ('' when nothing is complete yet). */
  feed(text: string): string {
    return this.#events.feed(text).map((event) => this.#event(event)).join('');
  }

  /** The backend's stream ended: a turn that never finished is an error, never a clean stop. */
  end(): string {
    let out = this.#events.rest().map((event) => this.#event(event)).join('');
    if (!this.#finished) out += this.#start() + this.#error('api_error', 'The upstream stream ended before the answer was complete. Retry the request.');
    return out;
  }

  /** The stream began (its headers are going out): message_start, once, with the usage known so far ('' after). */
  start(): string {
    return this.#finished ? '' : this.#start();
  }

  /** A long silence: a ping (after message_start if none went yet), '' once the stream is over. */
  keepAlive(): string {
    return this.#finished ? '' : this.#start() + PING;
  }

  #event(event: ChatEvent): string {
    if (this.#finished) return '';
    // A comment (`: ping`) is the backend keeping the connection alive: Anthropic's own keep-alive.
    if (event.kind === 'comment') return this.keepAlive();
    if (event.kind === 'done') return this.#start() + this.#finish();
    if (event.kind === 'error') return this.#start() + this.#error(errorType(event.error), String(event.error.message ?? 'The upstream failed.'));
    const chunk = event.chunk;
    let out = this.#start();
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning) out += this.#content('thinking', reasoning);
    if (typeof delta.content === 'string' && delta.content) out += this.#content('text', delta.content);
    for (const call of delta.tool_calls ?? []) out += this.#toolDelta(call);
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    return out;
  }

  #start(): string {
    if (this.#started) return '';
    this.#started = true;
    const usage = { input_tokens: this.#inputEstimate, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    return sse('message_start', { type: 'message_start', message: { id: messageId(this.#requestId), type: 'message', role: 'assistant', model: this.#model, content: [], stop_reason: null, stop_sequence: null, usage } });
  }

  /** Thinking or text: into the open block of its kind, a new one, or held while a tool block is open. */
  #content(kind: 'thinking' | 'text', piece: string): string {
    if (this.#open?.kind === 'tool_use') {
      const last = this.#held.at(-1);
      if (last?.kind === kind) last.parts.push(piece);
      else this.#held.push({ kind, block: emptyBlock(kind), parts: [piece] });
      return this.#holding(piece);
    }
    const opening = this.#open?.kind === kind ? '' : this.#close() + this.#openBlock(kind, emptyBlock(kind));
    return opening + this.#delta(kind, piece);
  }

  #toolDelta(call: Json): string {
    const tool = typeof call.index === 'number' ? call.index : 0;
    const fragment = typeof call.function?.arguments === 'string' ? call.function.arguments : '';
    if (this.#open?.kind === 'tool_use' && this.#open.tool === tool) return fragment ? this.#delta('tool_use', fragment) : '';
    const held = this.#heldTools.get(tool);
    if (held) {
      if (fragment) held.parts.push(fragment);
      return this.#holding(fragment);
    }
    this.#sawToolCall = true;
    const block = { type: 'tool_use', id: toAnthropicToolId(String(call.id ?? `toolu_${this.#requestId}_${tool}`)), name: String(call.function?.name ?? ''), input: {} };
    if (this.#open?.kind === 'tool_use') {
      const entry = { kind: 'tool_use' as const, block, parts: fragment ? [fragment] : [] };
      this.#held.push(entry);
      this.#heldTools.set(tool, entry);
      return this.#holding(fragment);
    }
    return this.#close() + this.#openBlock('tool_use', block, tool) + (fragment ? this.#delta('tool_use', fragment) : '');
  }

  /** Counts what was just held; past the bound the stream ends in error and nothing more is held. */
  #holding(piece: string): string {
    this.#heldChars += piece.length;
    if (this.#heldChars <= this.#maxHeldChars) return '';
    this.#held = [];
    this.#heldTools.clear();
    return this.#error('api_error', 'The upstream interleaved more content with an open tool call than the gateway holds for one answer; the answer is incomplete.');
  }

  #delta(kind: BlockKind, piece: string): string {
    const delta = kind === 'text' ? { type: 'text_delta', text: piece } : kind === 'thinking' ? { type: 'thinking_delta', thinking: piece } : { type: 'input_json_delta', partial_json: piece };
    return sse('content_block_delta', { type: 'content_block_delta', index: this.#index, delta });
  }

  #openBlock(kind: BlockKind, block: Json, tool?: number): string {
    this.#index++;
    this.#open = { kind, tool };
    return sse('content_block_start', { type: 'content_block_start', index: this.#index, content_block: block });
  }

  #close(): string {
    if (!this.#open) return '';
    this.#open = null;
    return sse('content_block_stop', { type: 'content_block_stop', index: this.#index });
  }

  /** The blocks held behind an open tool block, each written whole after it, in the order they began. */
  #releaseHeld(): string {
    let out = '';
    for (const held of this.#held) {
      out += this.#close() + this.#openBlock(held.kind, held.block);
      if (held.parts.length) out += this.#delta(held.kind, held.parts.join(''));
    }
    this.#held = [];
    this.#heldTools.clear();
    return out;
  }

  #finish(): string {
    this.#finished = true;
    const usage = anthropicUsage(this.#usage);
    const delta = { type: 'message_delta', delta: stopOf(this.#finishReason, this.#sawToolCall, this.#stops), usage };
    return this.#close() + this.#releaseHeld() + this.#close() + sse('message_delta', delta) + sse('message_stop', { type: 'message_stop' });
  }

  #error(type: string, message: string): string {
    this.#finished = true;
    return sse('error', { type: 'error', error: { type, message } });
  }
}

function emptyBlock(kind: 'thinking' | 'text'): Json {
  return kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
}

function sse(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The Anthropic error type closest to an OpenAI error event's. */
function errorType(error: Json): string {
  const code = String(error.code ?? '');
  if (code === 'server_shutting_down' || code.includes('overloaded') || code === 'upstream_unavailable') return 'overloaded_error';
  if (code.includes('timeout')) return 'timeout_error';
  if (error.type === 'rate_limit_error') return 'rate_limit_error';
  if (error.type === 'invalid_request_error') return 'invalid_request_error';
  return 'api_error';
}
