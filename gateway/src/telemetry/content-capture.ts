// Message contents on spans, only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (the
// GenAI conventions' switch; off by default: prompts and answers are the clients' data). Recorded as
// the conventions say on spans: `gen_ai.input.messages`, `gen_ai.output.messages` (JSON strings of
// `{role, parts[], finish_reason}`) and `gen_ai.system_instructions` (Responses `instructions`). Built
// once, when the request ends, from the request body and the answer the relay kept for it — and
// bounded: texts are cut, old messages dropped, and each attribute stays under MAX_ATTRIBUTE.
import type { ContentCapture } from '../exchange/exchange.ts';
import { DeferredJson } from '../http/deferred-json.ts';

/** Characters kept of one text part; the rest is replaced by an ellipsis. */
const MAX_TEXT = 4096;
/** Messages kept (the last ones: the turn being answered matters most). */
const MAX_MESSAGES = 32;
/** Largest attribute value, in characters of its JSON. */
export const MAX_ATTRIBUTE = 64 * 1024;
/** Stream events kept for the output, in characters; later events are not captured. */
export const MAX_STREAMED = 1024 * 1024;

type Part = Record<string, unknown>;
interface Message {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

const cut = (text: string): string => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text);
const record = (value: unknown): Record<string, unknown> | null => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null);

/** One content part of a request or answer: text kept (cut), anything else (images, audio, files) named by its type only. */
function partOf(value: unknown): Part | null {
  if (typeof value === 'string') return { type: 'text', content: cut(value) };
  const part = record(value);
  if (!part) return null;
  const text = part.text ?? part.refusal;
  if (typeof text === 'string') return { type: 'text', content: cut(text) };
  return typeof part.type === 'string' ? { type: part.type } : null;
}

function partsOf(content: unknown): Part[] {
  if (Array.isArray(content)) return content.map(partOf).filter((p): p is Part => p !== null);
  const part = partOf(content);
  return part ? [part] : [];
}

function toolCallsOf(calls: unknown): Part[] {
  if (!Array.isArray(calls)) return [];
  return calls.map((call) => {
    const c = record(call) ?? {};
    const fn = record(c.function) ?? c;
    return { type: 'tool_call', id: c.id ?? c.call_id ?? null, name: fn.name ?? null, arguments: typeof fn.arguments === 'string' ? cut(fn.arguments) : null };
  });
}

/** The input messages of a chat, legacy completion or Responses request body, and the Responses instructions. */
export function inputOf(body: unknown): { messages: Message[]; instructions: Part[] | null } {
  // Members of a body parsed off the event loop (TOLLGATE_JSON_OFFLOAD_BYTES) stay in the parser
  // worker: they are not brought back for a span, and are left out.
  const request = { ...(record(body) ?? {}) };
  for (const key of ['messages', 'prompt', 'input', 'instructions']) if (request[key] instanceof DeferredJson) delete request[key];
  const messages: Message[] = [];
  if (Array.isArray(request.messages)) {
    for (const item of request.messages) {
      const m = record(item);
      if (!m) continue;
      const role = typeof m.role === 'string' ? m.role : 'user';
      if (role === 'tool') messages.push({ role, parts: [{ type: 'tool_call_response', id: m.tool_call_id ?? null, response: cut(textOf(m.content)) }] });
      else messages.push({ role, parts: [...partsOf(m.content), ...toolCallsOf(m.tool_calls)] });
    }
  } else if (request.prompt !== undefined) {
    const prompts = Array.isArray(request.prompt) ? request.prompt : [request.prompt];
    for (const prompt of prompts) messages.push({ role: 'user', parts: partsOf(typeof prompt === 'string' ? prompt : JSON.stringify(prompt)) });
  } else if (request.input !== undefined) {
    const items = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : Array.isArray(request.input) ? request.input : [];
    for (const item of items) {
      const i = record(item);
      if (!i) continue;
      if (i.type === 'function_call_output') messages.push({ role: 'tool', parts: [{ type: 'tool_call_response', id: i.call_id ?? null, response: cut(textOf(i.output)) }] });
      else if (i.type === 'function_call') messages.push({ role: 'assistant', parts: toolCallsOf([i]) });
      else if (typeof i.role === 'string') messages.push({ role: i.role, parts: partsOf(i.content) });
    }
  }
  const instructions = typeof request.instructions === 'string' ? [{ type: 'text', content: cut(request.instructions) }] : null;
  return { messages, instructions };
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((p) => (typeof p === 'string' ? p : typeof record(p)?.text === 'string' ? record(p)!.text : '')).join('');
  return value === undefined || value === null ? '' : JSON.stringify(value);
}

/** The output messages of an answer object (chat completion, legacy completion, Responses object): one per choice. */
export function outputOf(answer: unknown, finishReasons: readonly string[] | null): Message[] {
  const object = record(answer);
  if (!object) return [];
  if (object.object === 'response' || Array.isArray(object.output)) {
    const parts: Part[] = [];
    for (const item of Array.isArray(object.output) ? object.output : []) {
      const i = record(item);
      if (!i) continue;
      if (i.type === 'message') parts.push(...partsOf(i.content));
      else if (i.type === 'function_call') parts.push(...toolCallsOf([i]));
    }
    return [{ role: 'assistant', parts, ...(finishReasons?.[0] ? { finish_reason: finishReasons[0] } : {}) }];
  }
  if (!Array.isArray(object.choices)) return [];
  return object.choices.map((choice, i) => {
    const c = record(choice) ?? {};
    const message = record(c.message);
    const parts = message ? [...partsOf(message.content), ...toolCallsOf(message.tool_calls)] : partsOf(c.text);
    const reason = typeof c.finish_reason === 'string' ? c.finish_reason : finishReasons?.[i];
    return { role: 'assistant', parts, ...(reason ? { finish_reason: reason } : {}) };
  });
}

/** The output of a relayed stream, from the events kept (chat and completion chunks, or Responses events). */
export function outputOfStream(events: readonly string[], finishReasons: readonly string[] | null): Message[] {
  const texts: string[] = [];
  const calls: Array<Map<number, { id: unknown; name: unknown; arguments: string }>> = [];
  for (const data of events) {
    let event: Record<string, unknown> | null;
    try {
      event = record(JSON.parse(data));
    } catch {
      continue;
    }
    if (!event) continue;
    // Responses: the final event carries the whole answer.
    const response = record(event.response);
    if (response && (event.type === 'response.completed' || event.type === 'response.incomplete')) return outputOf(response, finishReasons);
    for (const choice of Array.isArray(event.choices) ? event.choices : []) {
      const c = record(choice);
      if (!c) continue;
      const index = typeof c.index === 'number' && c.index >= 0 && c.index < 128 ? c.index : 0;
      const delta = record(c.delta);
      const text = delta ? delta.content : c.text;
      if (typeof text === 'string' && (texts[index] ?? '').length <= MAX_TEXT) texts[index] = (texts[index] ?? '') + text;
      for (const call of Array.isArray(delta?.tool_calls) ? delta!.tool_calls : []) {
        const tc = record(call);
        if (!tc) continue;
        const byIndex = (calls[index] ??= new Map());
        const at = typeof tc.index === 'number' ? tc.index : 0;
        const fn = record(tc.function) ?? {};
        const entry = byIndex.get(at) ?? { id: tc.id ?? null, name: fn.name ?? null, arguments: '' };
        if (typeof fn.arguments === 'string' && entry.arguments.length <= MAX_TEXT) entry.arguments += fn.arguments;
        byIndex.set(at, entry);
      }
    }
  }
  const count = Math.max(texts.length, calls.length, finishReasons?.length ?? 0);
  return Array.from({ length: count }, (_, i) => {
    const parts: Part[] = texts[i] !== undefined ? [{ type: 'text', content: cut(texts[i]) }] : [];
    for (const call of calls[i]?.values() ?? []) parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: cut(call.arguments) });
    return { role: 'assistant', parts, ...(finishReasons?.[i] ? { finish_reason: finishReasons[i] } : {}) };
  });
}

/** Messages as an attribute value: the last MAX_MESSAGES, fewer while the JSON is over MAX_ATTRIBUTE. */
export function bounded(messages: readonly unknown[]): string {
  let kept = messages.slice(-MAX_MESSAGES);
  let json = JSON.stringify(kept);
  while (json.length > MAX_ATTRIBUTE && kept.length > 1) {
    kept = kept.slice(1);
    json = JSON.stringify(kept);
  }
  return json.length > MAX_ATTRIBUTE ? '[]' : json;
}

/** The span attributes for a request's captured content. */
export function contentAttributes(content: ContentCapture, finishReasons: readonly string[] | null): Record<string, string> {
  try {
    return buildAttributes(content, finishReasons);
  } catch {
    // Whatever a body holds, recording it must never cost the request its span.
    return {};
  }
}

function buildAttributes(content: ContentCapture, finishReasons: readonly string[] | null): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (content.input !== null) {
    const { messages, instructions } = inputOf(content.input);
    if (messages.length > 0) attributes['gen_ai.input.messages'] = bounded(messages);
    if (instructions) attributes['gen_ai.system_instructions'] = bounded(instructions);
  }
  const output = content.output !== null ? outputOf(content.output, finishReasons) : content.streamed.length > 0 ? outputOfStream(content.streamed, finishReasons) : [];
  if (output.length > 0) attributes['gen_ai.output.messages'] = bounded(output);
  return attributes;
}

/** Keeps one event of a relayed stream for the output, within MAX_STREAMED. */
export function keepStreamed(content: ContentCapture, data: string): void {
  if (content.streamedChars + data.length > MAX_STREAMED) return;
  content.streamed.push(data);
  content.streamedChars += data.length;
}
