// A chat completion stream (the OpenAI SSE text a backend writes) as a Responses stream, built as it
// comes: response.created and response.in_progress first; per output item `output_item.added`, its
// content part, text or argument deltas, then its `done` events; the whole Response with usage in
// response.completed (or response.incomplete). Every event has its type and a sequence number from 0.
// A backend's failure is an `error` event the SDK raises.
//
// Reasoning and text are one item at a time (a switch closes the open one). Tool calls are not: a
// backend may interleave the argument fragments of parallel calls, or write text between them, so
// each call stays open, its fragments routed by the chat index to its own item (its own
// output_index), until the chat stream ends; then every open item is closed in output order.
import { ChatEventReader, type ChatEvent } from '../chat-events.ts';
import { CustomInputDecoder } from './custom-input-stream.ts';
import { customInputOf, customToolCallItem, functionCallItem, itemId, messageItem, reasoningItem, responseObject, responseUsage, type ResponseBase } from './response.ts';

type Json = Record<string, any>;

interface OpenItem {
  kind: 'message' | 'reasoning' | 'function_call' | 'custom_tool_call';
  index: number;
  id: string;
  text: string;
  callId?: string;
  name?: string;
  /** A custom tool's input, decoded from its arguments' JSON as they come. */
  input?: CustomInputDecoder;
}

export class ChatToResponsesStream {
  #base: ResponseBase;
  #events = new ChatEventReader();
  #sequence = 0;
  #started = false;
  #done = false;
  #failed = false;
  /** Output items by output_index, filled in as each closes. */
  #output: Json[] = [];
  #nextIndex = 0;
  /** The open message or reasoning item. */
  #textItem: OpenItem | null = null;
  /** Open tool calls by their chat index. */
  #tools = new Map<number, OpenItem>();
  #finishReason: string | null = null;
  #usage: Json | null = null;
  #final: Json | null = null;

  constructor(base: ResponseBase) {
    this.#base = base;
  }

  /** Chat SSE text in (any split), Responses SSE text out. */
  feed(text: string): string {
    return this.#events.feed(text).map((event) => this.#chatEvent(event)).join('');
  }

  /** The finished Response once the chat stream said [DONE] (to store before response.completed goes out). */
  get final(): Json | null {
    return this.#final;
  }

  /** The last event: response.completed (or incomplete); or an error when the stream never finished. */
  end(): string {
    const last = this.#events.rest().map((event) => this.#chatEvent(event)).join('');
    if (this.#failed) return last;
    if (!this.#final) return last + this.#start() + this.#error('upstream_stream_error', 'The upstream stream ended before the answer was complete. Retry the request.');
    if (this.#done) return last;
    this.#done = true;
    return last + this.#event(this.#final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.#final });
  }

  #chatEvent(event: ChatEvent): string {
    if (this.#final || this.#failed || event.kind === 'comment') return '';
    if (event.kind === 'done') {
      const out = this.#start() + this.#closeAll();
      this.#final = responseObject(this.#base, this.#output.filter(Boolean), this.#finishReason, responseUsage(this.#usage));
      return out;
    }
    if (event.kind === 'error') return this.#start() + this.#error(String(event.error.code ?? 'upstream_error'), String(event.error.message ?? 'The upstream failed.'));
    const chunk = event.chunk;
    let out = this.#start();
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning) out += this.#reasoning(reasoning);
    if (typeof delta.content === 'string' && delta.content) out += this.#text(delta.content);
    for (const call of delta.tool_calls ?? []) out += this.#tool(call);
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    return out;
  }

  #start(): string {
    if (this.#started) return '';
    this.#started = true;
    const inProgress = responseObject(this.#base, [], null, null, true);
    return this.#event('response.created', { response: inProgress }) + this.#event('response.in_progress', { response: inProgress });
  }

  #reasoning(text: string): string {
    let out = '';
    const asSummary = this.#base.summary !== null;
    if (this.#textItem?.kind !== 'reasoning') {
      out += this.#closeText();
      const open = this.#openItem('reasoning', itemId('rs_'));
      this.#textItem = open;
      const at = { item_id: open.id, output_index: open.index };
      out += this.#added(open, { ...reasoningItem('', asSummary, 'in_progress', open.id), summary: [], ...(asSummary ? {} : { content: [] }) });
      out += asSummary
        ? this.#event('response.reasoning_summary_part.added', { ...at, summary_index: 0, part: { type: 'summary_text', text: '' } })
        : this.#event('response.content_part.added', { ...at, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    }
    const open = this.#textItem!;
    open.text += text;
    const at = { item_id: open.id, output_index: open.index };
    return out + (asSummary ? this.#event('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta: text }) : this.#event('response.reasoning_text.delta', { ...at, content_index: 0, delta: text }));
  }

  #text(text: string): string {
    let out = '';
    if (this.#textItem?.kind !== 'message') {
      out += this.#closeText();
      const open = this.#openItem('message', itemId('msg_'));
      this.#textItem = open;
      out += this.#added(open, { ...messageItem('', 'in_progress', open.id), content: [] });
      out += this.#event('response.content_part.added', { item_id: open.id, output_index: open.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    }
    const open = this.#textItem!;
    open.text += text;
    return out + this.#event('response.output_text.delta', { item_id: open.id, output_index: open.index, content_index: 0, delta: text, logprobs: [] });
  }

  #tool(call: Json): string {
    const chatIndex = typeof call.index === 'number' ? call.index : 0;
    let out = '';
    let open = this.#tools.get(chatIndex);
    if (!open) {
      // A call starts a new item; text after it opens a new message rather than continuing the old.
      out += this.#closeText();
      const name = String(call.function?.name ?? '');
      const custom = this.#base.customTools.has(name);
      open = this.#openItem(custom ? 'custom_tool_call' : 'function_call', itemId(custom ? 'ctc_' : 'fc_'));
      open.callId = String(call.id ?? itemId('call_'));
      open.name = name;
      if (custom) open.input = new CustomInputDecoder();
      this.#tools.set(chatIndex, open);
      out += this.#added(open, custom ? customToolCallItem(open.callId, name, '', open.id) : functionCallItem(open.callId, name, '', 'in_progress', open.id));
    }
    const fragment = call.function?.arguments;
    if (typeof fragment === 'string' && fragment) {
      open.text += fragment;
      if (open.kind === 'function_call') out += this.#event('response.function_call_arguments.delta', { item_id: open.id, output_index: open.index, delta: fragment });
      // A custom tool's input is the string inside the arguments' JSON, streamed as it is decoded.
      const input = open.input?.push(fragment);
      if (input) out += this.#event('response.custom_tool_call_input.delta', { item_id: open.id, output_index: open.index, delta: input });
    }
    return out;
  }

  #openItem(kind: OpenItem['kind'], id: string): OpenItem {
    return { kind, index: this.#nextIndex++, id, text: '' };
  }

  #added(open: OpenItem, item: Json): string {
    return this.#event('response.output_item.added', { output_index: open.index, item });
  }

  #closeText(): string {
    const open = this.#textItem;
    if (!open) return '';
    this.#textItem = null;
    return this.#close(open);
  }

  /** Every open item, in output order. */
  #closeAll(): string {
    const open = [...(this.#textItem ? [this.#textItem] : []), ...this.#tools.values()].sort((a, b) => a.index - b.index);
    this.#textItem = null;
    this.#tools.clear();
    return open.map((item) => this.#close(item)).join('');
  }

  #close(open: OpenItem): string {
    const at = { item_id: open.id, output_index: open.index };
    let out = '';
    let item: Json;
    if (open.kind === 'message') {
      item = messageItem(open.text, this.#finishReason === 'length' ? 'incomplete' : 'completed', open.id);
      out += this.#event('response.output_text.done', { ...at, content_index: 0, text: open.text, logprobs: [] });
      out += this.#event('response.content_part.done', { ...at, content_index: 0, part: item.content[0] });
    } else if (open.kind === 'function_call') {
      const args = open.text || '{}';
      item = functionCallItem(open.callId!, open.name!, args, 'completed', open.id);
      out += this.#event('response.function_call_arguments.done', { ...at, name: open.name, arguments: args });
    } else if (open.kind === 'custom_tool_call') {
      const input = customInputOf(open.text);
      item = customToolCallItem(open.callId!, open.name!, input, open.id);
      // What could not be decoded as it came (arguments that were not `{"input": …}`) is given now.
      const streamed = open.input?.decoded ?? '';
      const rest = input.startsWith(streamed) ? input.slice(streamed.length) : '';
      if (rest) out += this.#event('response.custom_tool_call_input.delta', { ...at, delta: rest });
      out += this.#event('response.custom_tool_call_input.done', { ...at, input });
    } else if (this.#base.summary !== null) {
      item = reasoningItem(open.text, true, 'completed', open.id);
      out += this.#event('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: open.text });
      out += this.#event('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: item.summary[0] });
    } else {
      item = reasoningItem(open.text, false, 'completed', open.id);
      out += this.#event('response.reasoning_text.done', { ...at, content_index: 0, text: open.text });
      out += this.#event('response.content_part.done', { ...at, content_index: 0, part: item.content[0] });
    }
    this.#output[open.index] = item;
    return out + this.#event('response.output_item.done', { output_index: open.index, item });
  }

  #error(code: string, message: string): string {
    this.#failed = true;
    // `error` in the data is what makes the SDK throw rather than return half a response.
    return this.#event('error', { code, message, param: null, error: { type: 'server_error', code, message, param: null } });
  }

  #event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: this.#sequence++ })}\n\n`;
  }
}
