// Anthropic's Messages stream (message_start → content blocks → message_delta → message_stop) as
// OpenAI chat.completion.chunk frames, fed bytes in any split. Tool calls get OpenAI's per-turn
// index from a map of Anthropic block index → tool index (block indexes count text and thinking
// blocks too), argument fragments are routed by the event's block index, a tool that streamed no
// arguments gets "{}", thinking streams as `delta.reasoning_content`. Only message_stop ends the
// stream with [DONE]; an `error` event or a body that ends before it is a ProviderStreamError.
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { AnswerContext, ChatStreamTranslator, OpenAIUsage } from '../provider.ts';
import { ProviderStreamError } from '../provider.ts';
import { streamError } from './errors.ts';
import { completionId, finishReason, openAIUsage, stopSequenceHit, type AnthropicUsage } from './response.ts';
import type { StopSequenceHit } from '../../exchange/exchange.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Longest SSE event held while its end has not arrived: an upstream cannot make the gateway buffer more. */
const MAX_EVENT_BYTES = 8 * 1024 * 1024;
/**
 * Longest thinking text held for its signed block (a model's whole output budget is far less): past
 * it the block's text still streams but is not returned for replay, since it could not be whole.
 */
const MAX_THINKING_CHARS = 4 * 1024 * 1024;

interface ToolBlock {
  kind: 'tool';
  index: number;
  sentArguments: boolean;
}
interface ThinkingBlock {
  kind: 'thinking';
  redacted: boolean;
  /** Kept until the block ends, when it is sent whole with its signature as `thinking_blocks` (bounded by max_tokens). */
  text: string;
  signature: string;
  data: string;
  /** The text outgrew MAX_THINKING_CHARS: the block is not returned for replay. */
  overflowed: boolean;
}
type OpenBlock = ToolBlock | ThinkingBlock | { kind: 'other' };

export class AnthropicStreamTranslator implements ChatStreamTranslator {
  readonly #ctx: AnswerContext;
  readonly #decoder = new TextDecoder();
  readonly #parser: EventSourceParser;
  #pending: EventSourceMessage[] = [];
  #parseError: string | null = null;
  #id: string;
  #started = false;
  #stopped = false;
  #blocks = new Map<number, OpenBlock>();
  #nextTool = 0;
  #stopReason: unknown = null;
  #stopSequence: unknown = null;
  #usage: AnthropicUsage = {};
  #finish: string | null = null;
  /** A failure found after some frames of the same read were translated: thrown on the next call. */
  #failure: ProviderStreamError | null = null;

  constructor(ctx: AnswerContext) {
    this.#ctx = ctx;
    this.#id = completionId(null, ctx);
    this.#parser = createParser({
      maxBufferSize: MAX_EVENT_BYTES,
      onEvent: (event) => this.#pending.push(event),
      onComment: () => undefined,
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') this.#parseError = 'Anthropic sent a stream event larger than the gateway accepts.';
      },
    });
  }

  feed(chunk: Buffer): string {
    if (this.#failure) throw this.#failure;
    if (this.#stopped) return '';
    this.#parser.feed(this.#decoder.decode(chunk, { stream: true }));
    if (this.#parseError) throw new ProviderStreamError(this.#parseError, 'upstream_invalid_response');
    const events = this.#pending;
    this.#pending = [];
    let out = '';
    for (const event of events) {
      if (this.#stopped) break;
      try {
        out += this.#event(event);
      } catch (error) {
        // The frames before the failure in this read still reach the client; the failure follows
        // on the next call (the body ends right after an error event).
        if (!(error instanceof ProviderStreamError) || out === '') throw error;
        this.#failure = error;
        break;
      }
    }
    return out;
  }

  end(): string {
    if (this.#failure) throw this.#failure;
    if (!this.#stopped) {
      this.#parser.feed(this.#decoder.decode() + '\n\n');
      // A last event without its blank line still counts (message_stop as the very last bytes).
      const out = this.feed(Buffer.alloc(0));
      if (this.#stopped) return out;
      throw new ProviderStreamError('Anthropic\'s stream ended before message_stop: the answer is incomplete.', 'upstream_stream_truncated');
    }
    return '';
  }

  usage(): OpenAIUsage | null {
    return this.#started ? openAIUsage(this.#usage) : null;
  }

  finishReason(): string | null {
    return this.#finish;
  }

  stopSequence(): StopSequenceHit | null {
    return this.#finish === null ? null : stopSequenceHit(this.#stopReason, this.#stopSequence);
  }

  #event(event: EventSourceMessage): string {
    const type = event.event;
    if (type === 'ping') return ': ping\n\n';
    if (type === 'error') throw streamError(event.data);
    let data: Json;
    try {
      const parsed: unknown = JSON.parse(event.data);
      if (!isObject(parsed)) return '';
      data = parsed;
    } catch {
      throw new ProviderStreamError('Anthropic sent a stream event that is not JSON.', 'upstream_invalid_response');
    }
    // The event name and the data's `type` agree on Anthropic; the data is what the SDKs read.
    switch (data.type ?? type) {
      case 'message_start':
        return this.#messageStart(data);
      case 'content_block_start':
        return this.#blockStart(data);
      case 'content_block_delta':
        return this.#blockDelta(data);
      case 'content_block_stop':
        return this.#blockStop(data);
      case 'message_delta':
        if (isObject(data.delta) && data.delta.stop_reason != null) {
          this.#stopReason = data.delta.stop_reason;
          this.#stopSequence = data.delta.stop_sequence;
        }
        if (isObject(data.usage)) this.#mergeUsage(data.usage as AnthropicUsage);
        return '';
      case 'message_stop':
        return this.#messageStop();
      case 'error':
        throw streamError(event.data);
      default:
        return ''; // events added to the API later
    }
  }

  #messageStart(data: Json): string {
    const message = isObject(data.message) ? data.message : {};
    this.#id = completionId(message.id, this.#ctx);
    if (isObject(message.usage)) this.#mergeUsage(message.usage as AnthropicUsage);
    this.#started = true;
    return this.#chunk({ role: 'assistant', content: '' });
  }

  #blockStart(data: Json): string {
    const index = Number(data.index);
    const block = isObject(data.content_block) ? data.content_block : {};
    if (block.type === 'tool_use') {
      const tool: ToolBlock = { kind: 'tool', index: this.#nextTool++, sentArguments: false };
      this.#blocks.set(index, tool);
      return this.#chunk({ tool_calls: [{ index: tool.index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
    }
    if (block.type === 'thinking' || block.type === 'redacted_thinking') {
      const redacted = block.type === 'redacted_thinking';
      this.#blocks.set(index, { kind: 'thinking', redacted, text: '', signature: '', data: redacted && typeof block.data === 'string' ? block.data : '', overflowed: false });
      return '';
    }
    this.#blocks.set(index, { kind: 'other' });
    // A text block may open with text already in it (Anthropic sends "" today).
    return block.type === 'text' && typeof block.text === 'string' && block.text !== '' ? this.#chunk({ content: block.text }) : '';
  }

  #blockDelta(data: Json): string {
    const delta = isObject(data.delta) ? data.delta : {};
    const block = this.#blocks.get(Number(data.index));
    switch (delta.type) {
      case 'text_delta':
        return typeof delta.text === 'string' && delta.text !== '' ? this.#chunk({ content: delta.text }) : '';
      case 'thinking_delta':
        if (typeof delta.thinking !== 'string' || delta.thinking === '') return '';
        if (block?.kind === 'thinking' && !block.overflowed) {
          block.text += delta.thinking;
          if (block.text.length > MAX_THINKING_CHARS) {
            block.overflowed = true;
            block.text = '';
          }
        }
        return this.#chunk({ reasoning_content: delta.thinking });
      case 'signature_delta':
        if (block?.kind === 'thinking' && typeof delta.signature === 'string') block.signature += delta.signature;
        return '';
      case 'input_json_delta': {
        if (block?.kind !== 'tool' || typeof delta.partial_json !== 'string' || delta.partial_json === '') return '';
        block.sentArguments = true;
        return this.#chunk({ tool_calls: [{ index: block.index, function: { arguments: delta.partial_json } }] });
      }
      default:
        return ''; // citations_delta and later additions have no OpenAI field
    }
  }

  #blockStop(data: Json): string {
    const block = this.#blocks.get(Number(data.index));
    // A stopped block gets no more deltas: forgetting it keeps the map as small as the open blocks.
    this.#blocks.delete(Number(data.index));
    if (block?.kind === 'tool' && !block.sentArguments) {
      block.sentArguments = true;
      return this.#chunk({ tool_calls: [{ index: block.index, function: { arguments: '{}' } }] });
    }
    if (block?.kind === 'thinking' && !block.overflowed) {
      const signed = block.redacted ? { type: 'redacted_thinking', data: block.data } : { type: 'thinking', thinking: block.text, signature: block.signature };
      block.text = '';
      return this.#chunk({ thinking_blocks: [signed] });
    }
    return '';
  }

  #messageStop(): string {
    if (!this.#started) throw new ProviderStreamError('Anthropic\'s stream ended without a message_start.', 'upstream_invalid_response');
    this.#stopped = true;
    this.#finish = finishReason(this.#stopReason, this.#nextTool > 0);
    let out = this.#chunk({}, this.#finish);
    if (this.#ctx.includeUsage) {
      out += frame({ id: this.#id, object: 'chat.completion.chunk', created: this.#ctx.created, model: this.#ctx.publicModel, choices: [], usage: openAIUsage(this.#usage) });
    }
    return `${out}data: [DONE]\n\n`;
  }

  /** message_delta's usage is cumulative: each count present replaces the one before. */
  #mergeUsage(usage: AnthropicUsage): void {
    for (const [key, value] of Object.entries(usage)) {
      if (value != null) (this.#usage as Json)[key] = value;
    }
  }

  #chunk(delta: Json, finish: string | null = null): string {
    const chunk: Json = {
      id: this.#id,
      object: 'chat.completion.chunk',
      created: this.#ctx.created,
      model: this.#ctx.publicModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    // OpenAI sends usage: null on every chunk when the client asked for the usage chunk.
    if (this.#ctx.includeUsage) chunk.usage = null;
    return frame(chunk);
  }
}

function frame(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

export function chatStream(ctx: AnswerContext): ChatStreamTranslator {
  return new AnthropicStreamTranslator(ctx);
}
