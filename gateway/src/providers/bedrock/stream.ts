// ConverseStream (binary event stream) → OpenAI `chat.completion.chunk` SSE. Honours `:message-type`:
// `exception` and `error` messages are failures, never skipped. Text blocks have no contentBlockStart;
// Bedrock's contentBlockIndex counts text blocks too, so tool calls get their own OpenAI index. The
// finish chunk goes out at messageStop; the usage chunk and [DONE] after `metadata` (or at the end of
// the body once messageStop was seen). A body that ends before messageStop is a failure.
import type { Message } from '@smithy/eventstream-codec';
import { toUtf8 } from '@smithy/util-utf8';
import { ProviderStreamError, type AnswerContext, type ChatStreamTranslator, type OpenAIUsage } from '../provider.ts';
import { streamExceptionError } from './errors.ts';
import { EventStreamFramer, frameError, stringHeader } from './frames.ts';
import { completionId, finishReason, openAIUsage, stopSequenceHit } from './response.ts';
import type { StopSequenceHit } from '../../exchange/exchange.ts';
import { clientToolName } from './tool-names.ts';

interface ToolBlock {
  index: number;
  sentArguments: boolean;
}

export class ConverseStreamTranslator implements ChatStreamTranslator {
  private readonly framer = new EventStreamFramer();
  private readonly id: string;
  private roleSent = false;
  private readonly tools = new Map<number, ToolBlock>();
  private stopReason: string | null = null;
  private finish: string | null = null;
  private stopHit: StopSequenceHit | null = null;
  private reportedUsage: OpenAIUsage | null = null;
  private done = false;
  /** A failure found in a read that also carried good chunks: thrown on the next call. */
  private pending: ProviderStreamError | null = null;
  private readonly ctx: AnswerContext;

  constructor(ctx: AnswerContext) {
    this.ctx = ctx;
    this.id = completionId(ctx);
  }

  feed(chunk: Buffer): string {
    this.throwPending();
    if (this.done) return '';
    let out = '';
    try {
      for (const message of this.framer.push(chunk)) out += this.onMessage(message);
    } catch (err) {
      // Chunks translated from the same read come first: the client sees the text that preceded the
      // failure, then the failure on the next call.
      if (out === '' || !(err instanceof ProviderStreamError)) throw err;
      this.pending = err;
    }
    return out;
  }

  end(): string {
    this.throwPending();
    if (this.done) return '';
    if (this.stopReason === null) {
      const cut = this.framer.pending() > 0 ? ' in the middle of a message' : '';
      throw new ProviderStreamError(`Amazon Bedrock's stream ended${cut} before messageStop: the answer is incomplete.`, 'upstream_stream_truncated');
    }
    // messageStop came but metadata did not: the answer is whole, its usage unknown.
    return this.tail();
  }

  private throwPending(): void {
    if (this.pending) throw this.pending;
  }

  usage(): OpenAIUsage | null {
    return this.reportedUsage;
  }

  finishReason(): string | null {
    return this.finish;
  }

  stopSequence(): StopSequenceHit | null {
    return this.stopHit;
  }

  private onMessage(message: Message): string {
    const type = stringHeader(message, ':message-type');
    if (type === 'exception') {
      const exception = stringHeader(message, ':exception-type') ?? 'unknownException';
      throw streamExceptionError(exception, messageText(payload(message)));
    }
    if (type === 'error') {
      const code = stringHeader(message, ':error-code') ?? 'UnknownError';
      throw new ProviderStreamError(`Amazon Bedrock stream error ${code}: ${stringHeader(message, ':error-message') ?? 'no message'}`);
    }
    if (type !== 'event') throw frameError(`a message of type '${String(type)}'`);
    if (this.done) return '';
    const event = payload(message) as Record<string, any>;
    switch (stringHeader(message, ':event-type')) {
      case 'messageStart':
        return this.role();
      case 'contentBlockStart':
        return this.role() + this.blockStart(event);
      case 'contentBlockDelta':
        return this.role() + this.blockDelta(event);
      case 'contentBlockStop':
        return this.blockStop(event);
      case 'messageStop':
        return this.messageStop(event);
      case 'metadata':
        return this.metadata(event);
      default:
        return ''; // Event types added later by AWS carry nothing an OpenAI client can be told.
    }
  }

  private chunk(delta: Record<string, unknown>, finish: string | null = null): string {
    const chunk: Record<string, unknown> = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.ctx.created,
      model: this.ctx.publicModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    if (this.ctx.includeUsage) chunk.usage = null;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  private role(): string {
    if (this.roleSent) return '';
    this.roleSent = true;
    return this.chunk({ role: 'assistant', content: '' });
  }

  private blockStart(event: Record<string, any>): string {
    const toolUse = event.start?.toolUse;
    if (!toolUse || typeof event.contentBlockIndex !== 'number') return '';
    const block: ToolBlock = { index: this.tools.size, sentArguments: false };
    this.tools.set(event.contentBlockIndex, block);
    return this.chunk({
      tool_calls: [{ index: block.index, id: toolUse.toolUseId, type: 'function', function: { name: clientToolName(String(toolUse.name)), arguments: '' } }],
    });
  }

  private blockDelta(event: Record<string, any>): string {
    const delta = event.delta ?? {};
    if (typeof delta.text === 'string') return delta.text === '' ? '' : this.chunk({ content: delta.text });
    if (typeof delta.toolUse?.input === 'string') {
      const block = this.tools.get(event.contentBlockIndex);
      if (!block || delta.toolUse.input === '') return '';
      block.sentArguments = true;
      return this.chunk({ tool_calls: [{ index: block.index, function: { arguments: delta.toolUse.input } }] });
    }
    const reasoning = delta.reasoningContent?.text;
    if (typeof reasoning === 'string' && reasoning !== '') return this.chunk({ reasoning_content: reasoning });
    return '';
  }

  private blockStop(event: Record<string, any>): string {
    const block = this.tools.get(event.contentBlockIndex);
    // A tool called without arguments may get no input delta at all: its arguments are "{}".
    if (!block || block.sentArguments) return '';
    block.sentArguments = true;
    return this.chunk({ tool_calls: [{ index: block.index, function: { arguments: '{}' } }] });
  }

  private messageStop(event: Record<string, any>): string {
    if (this.stopReason !== null) return '';
    this.stopReason = String(event.stopReason ?? 'end_turn');
    this.finish = finishReason(this.stopReason, this.tools.size > 0);
    this.stopHit = stopSequenceHit(this.stopReason, event.additionalModelResponseFields);
    const out = this.role() + this.chunk({}, this.finish);
    return this.reportedUsage ? out + this.tail() : out;
  }

  private metadata(event: Record<string, any>): string {
    this.reportedUsage = openAIUsage(event.usage);
    // Converse sends metadata after messageStop; should it come first, the end waits for messageStop.
    return this.stopReason === null ? '' : this.tail();
  }

  /** The usage chunk (when asked for and known) and [DONE]. */
  private tail(): string {
    this.done = true;
    let out = '';
    if (this.ctx.includeUsage && this.reportedUsage) {
      out += `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.ctx.created, model: this.ctx.publicModel, choices: [], usage: this.reportedUsage })}\n\n`;
    }
    return `${out}data: [DONE]\n\n`;
  }
}

function payload(message: Message): unknown {
  if (message.body.length === 0) return {};
  try {
    return JSON.parse(toUtf8(message.body));
  } catch {
    throw frameError('an event payload is not JSON');
  }
}

function messageText(body: unknown): string {
  const record = body as { message?: unknown; Message?: unknown } | null;
  const text = record?.message ?? record?.Message;
  return typeof text === 'string' ? text : 'no message';
}
