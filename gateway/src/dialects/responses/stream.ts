// A chat completion stream (the OpenAI SSE text a backend writes) as a Responses stream, built as it
// comes: response.created and response.in_progress first; per output item `output_item.added`, its
// content part, text or argument deltas, then its `done` events (an item is closed before the next
// opens); the whole Response with usage in response.completed (or response.incomplete). Every event
// has its type and a sequence number from 0. A backend's failure is an `error` event the SDK raises.
import { ChatEventReader, type ChatEvent } from '../chat-events.ts';
import { functionCallItem, itemId, messageItem, reasoningItem, responseObject, responseUsage, type ResponseBase } from './response.ts';

type Json = Record<string, any>;

interface OpenItem {
  kind: 'message' | 'function_call' | 'reasoning';
  index: number;
  id: string;
  text: string;
  tool?: number;
  callId?: string;
  name?: string;
}

export class ChatToResponsesStream {
  #base: ResponseBase;
  #events = new ChatEventReader();
  #sequence = 0;
  #started = false;
  #done = false;
  #failed = false;
  #output: Json[] = [];
  #open: OpenItem | null = null;
  #seenTools = new Set<number>();
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
      const out = this.#start() + this.#close();
      this.#final = responseObject(this.#base, this.#output, this.#finishReason, responseUsage(this.#usage));
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
    if (this.#open?.kind !== 'reasoning') {
      out += this.#close();
      const item = reasoningItem('', 'in_progress');
      out += this.#openItem({ kind: 'reasoning', index: this.#output.length, id: item.id, text: '' }, { ...item, content: [] });
    }
    this.#open!.text += text;
    return out + this.#event('response.reasoning_text.delta', { item_id: this.#open!.id, output_index: this.#open!.index, content_index: 0, delta: text });
  }

  #text(text: string): string {
    let out = '';
    if (this.#open?.kind !== 'message') {
      out += this.#close();
      const id = itemId('msg_');
      out += this.#openItem({ kind: 'message', index: this.#output.length, id, text: '' }, { ...messageItem('', 'in_progress', id), content: [] });
      out += this.#event('response.content_part.added', { item_id: id, output_index: this.#open!.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    }
    this.#open!.text += text;
    return out + this.#event('response.output_text.delta', { item_id: this.#open!.id, output_index: this.#open!.index, content_index: 0, delta: text, logprobs: [] });
  }

  #tool(call: Json): string {
    const index = typeof call.index === 'number' ? call.index : 0;
    let out = '';
    if (!this.#seenTools.has(index)) {
      this.#seenTools.add(index);
      out += this.#close();
      const id = itemId('fc_');
      const callId = String(call.id ?? itemId('call_'));
      const name = String(call.function?.name ?? '');
      out += this.#openItem({ kind: 'function_call', index: this.#output.length, id, text: '', tool: index, callId, name }, functionCallItem(callId, name, '', 'in_progress', id));
    }
    const fragment = call.function?.arguments;
    if (typeof fragment === 'string' && fragment && this.#open?.tool === index) {
      this.#open.text += fragment;
      out += this.#event('response.function_call_arguments.delta', { item_id: this.#open.id, output_index: this.#open.index, delta: fragment });
    }
    return out;
  }

  #openItem(open: OpenItem, item: Json): string {
    this.#open = open;
    return this.#event('response.output_item.added', { output_index: open.index, item });
  }

  #close(): string {
    const open = this.#open;
    if (!open) return '';
    this.#open = null;
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
    } else {
      item = { ...reasoningItem(open.text), id: open.id };
      out += this.#event('response.reasoning_text.done', { ...at, content_index: 0, text: open.text });
    }
    this.#output.push(item);
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
