// An OpenAI chat completion stream (the SSE text any backend writes) turned into the Messages API's
// stream, as Claude Code and the Anthropic SDKs parse it: exactly one message_start; one content block
// per logical block with sequential indices, each closed before the next opens (thinking, text, one
// per tool call keyed by OpenAI's tool index); tool input as input_json_delta; message_delta with the
// stop reason (tool_use whenever a tool was called) and usage; message_stop — also for a truncated
// turn; an `error` event when the backend failed mid-stream, and never a message_stop after it.
import { ChatEventReader, type ChatEvent } from '../chat-events.ts';
import { anthropicUsage, messageId, stopReason } from './response.ts';

type Json = Record<string, any>;
type BlockKind = 'thinking' | 'text' | 'tool_use';

export class ChatToMessagesStream {
  #model: string;
  #requestId: string;
  #inputEstimate: number;
  #events = new ChatEventReader();
  #started = false;
  #finished = false;
  #index = -1;
  #open: { kind: BlockKind; tool?: number } | null = null;
  #toolBlocks = new Map<number, number>();
  #sawToolCall = false;
  #finishReason: string | null = null;
  #usage: Json | null = null;

  /** `inputEstimate`: the input tokens as the gateway estimated them, for message_start (the backend reports the real count at the end). */
  constructor(model: string, requestId: string, inputEstimate: number) {
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
    if (!this.#finished) out += this.#error('api_error', 'The upstream stream ended before the answer was complete. Retry the request.');
    return out;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** message_start is out: events such as ping may follow. */
  get started(): boolean {
    return this.#started;
  }

  #event(event: ChatEvent): string {
    if (this.#finished) return '';
    // A comment (`: ping`) is the backend keeping the connection alive: Anthropic's own keep-alive.
    if (event.kind === 'comment') return this.#start() + sse('ping', { type: 'ping' });
    if (event.kind === 'done') return this.#start() + this.#finish();
    if (event.kind === 'error') return this.#start() + this.#error(errorType(event.error), String(event.error.message ?? 'The upstream failed.'));
    const chunk = event.chunk;
    let out = this.#start();
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning) out += this.#ensure('thinking') + sse('content_block_delta', { type: 'content_block_delta', index: this.#index, delta: { type: 'thinking_delta', thinking: reasoning } });
    if (typeof delta.content === 'string' && delta.content) out += this.#ensure('text') + sse('content_block_delta', { type: 'content_block_delta', index: this.#index, delta: { type: 'text_delta', text: delta.content } });
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

  /** Opens a block of `kind` unless it is the one open (a tool block is never reused for text). */
  #ensure(kind: 'thinking' | 'text'): string {
    if (this.#open?.kind === kind) return '';
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    return this.#close() + this.#openBlock(kind, block);
  }

  #toolDelta(call: Json): string {
    const toolIndex = typeof call.index === 'number' ? call.index : 0;
    let out = '';
    if (!this.#toolBlocks.has(toolIndex)) {
      this.#sawToolCall = true;
      out += this.#close() + this.#openBlock('tool_use', { type: 'tool_use', id: String(call.id ?? `toolu_${this.#requestId}_${toolIndex}`), name: String(call.function?.name ?? ''), input: {} }, toolIndex);
      this.#toolBlocks.set(toolIndex, this.#index);
    }
    const fragment = call.function?.arguments;
    // Fragments route by OpenAI's tool index; the block they belong to is the open one in any stream
    // that sends its calls one after another, as every backend here does.
    if (typeof fragment === 'string' && fragment && this.#open?.tool === toolIndex) {
      out += sse('content_block_delta', { type: 'content_block_delta', index: this.#toolBlocks.get(toolIndex), delta: { type: 'input_json_delta', partial_json: fragment } });
    }
    return out;
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

  #finish(): string {
    this.#finished = true;
    const usage = anthropicUsage(this.#usage);
    const delta = { type: 'message_delta', delta: { stop_reason: stopReason(this.#finishReason, this.#sawToolCall), stop_sequence: null }, usage };
    return this.#close() + sse('message_delta', delta) + sse('message_stop', { type: 'message_stop' });
  }

  #error(type: string, message: string): string {
    this.#finished = true;
    return sse('error', { type: 'error', error: { type, message } });
  }
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
