// OpenAI's messages as Gemini's `systemInstruction` and `contents`. Gemini has no system role (every
// system and developer message, in order, goes into `systemInstruction`), wants `user` and `model`
// turns to alternate (neighbours of one role are merged), names a tool result by the function's name
// rather than the call's id (looked up in the history), and wants a turn's results together in the
// next user turn, as many as there were calls and in their order.
import { ApiError } from '../../http/errors.ts';
import type { OpenAIBody } from '../provider.ts';
import { decodeToolCallId, SKIP_SIGNATURE } from './tool-ids.ts';
import type { GoogleSurface, ModelTraits } from './variant.ts';

export type Part = Record<string, unknown>;
export interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

interface Message {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

interface PendingCalls {
  /** The calls of the last model turn, in order: the client's id (whole) → function name. */
  ids: string[];
  names: Map<string, string>;
  results: Map<string, Part>;
  /** Index of the message that made the calls (for error params). */
  at: number;
}

const IMAGE_MIME: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', heic: 'image/heic', heif: 'image/heif', pdf: 'application/pdf' };

export function buildContents(body: OpenAIBody, surface: GoogleSurface, traits: ModelTraits): { systemInstruction?: { parts: Part[] }; contents: Content[] } {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : [];
  const system: Part[] = [];
  const contents: Content[] = [];
  let pending: PendingCalls | null = null;

  const push = (role: Content['role'], parts: Part[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  const flushResults = () => {
    if (!pending) return;
    const missing = pending.ids.filter((id) => !pending!.results.has(id));
    if (missing.length > 0) {
      throw new ApiError(400, 'invalid_request', `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. Missing: ${missing.join(', ')}.`, { param: `messages[${pending.at}].tool_calls` });
    }
    push('user', pending.ids.map((id) => pending!.results.get(id)!));
    pending = null;
  };

  messages.forEach((message, i) => {
    const role = message.role;
    if (role === 'tool') {
      const callId = typeof message.tool_call_id === 'string' ? message.tool_call_id : '';
      const name = pending?.names.get(callId);
      if (!pending || name === undefined) {
        throw new ApiError(400, 'invalid_request', `Messages with role 'tool' must be a response to a preceding message with 'tool_calls'; no call has the id '${callId}'.`, { param: `messages[${i}].tool_call_id` });
      }
      const response: Part = { name, response: toolResponse(textOf(message.content, `messages[${i}].content`)) };
      if (surface === 'gemini') response.id = decodeToolCallId(callId).id;
      pending.results.set(callId, { functionResponse: response });
      return;
    }
    flushResults();
    if (role === 'system' || role === 'developer') {
      const text = textOf(message.content, `messages[${i}].content`);
      if (text) system.push({ text });
    } else if (role === 'user') {
      push('user', userParts(message.content, i));
    } else if (role === 'assistant') {
      const parts: Part[] = [];
      const text = message.content == null ? '' : textOf(message.content, `messages[${i}].content`, true);
      if (text) parts.push({ text });
      const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
      if (calls.length > 0) {
        pending = { ids: [], names: new Map(), results: new Map(), at: i };
        calls.forEach((call, j) => parts.push(functionCall(call, i, j, j === 0, surface, traits, pending!)));
      }
      push('model', parts);
    } else {
      throw new ApiError(400, 'unsupported_parameter', `Messages of role '${String(role)}' cannot be sent to Gemini (system, developer, user, assistant and tool can).`, { param: `messages[${i}].role` });
    }
  });
  flushResults();

  // Gemini requires a user turn; a request of system messages alone gets one blank turn.
  if (contents.length === 0) contents.push({ role: 'user', parts: [{ text: ' ' }] });
  return { ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}), contents };
}

function functionCall(call: unknown, i: number, j: number, first: boolean, surface: GoogleSurface, traits: ModelTraits, pending: PendingCalls): Part {
  const param = `messages[${i}].tool_calls[${j}]`;
  const c = (call ?? {}) as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
  if (c.type !== undefined && c.type !== 'function') throw new ApiError(400, 'unsupported_parameter', `Tool calls of type '${String(c.type)}' cannot be sent to Gemini.`, { param: `${param}.type` });
  const id = typeof c.id === 'string' ? c.id : '';
  const name = typeof c.function?.name === 'string' ? c.function.name : '';
  if (!name) throw new ApiError(400, 'invalid_request', 'A tool call needs a function name.', { param: `${param}.function.name` });
  const raw = typeof c.function?.arguments === 'string' ? c.function.arguments.trim() : '';
  let args: unknown = {};
  if (raw) {
    try {
      args = JSON.parse(raw);
    } catch {
      throw new ApiError(400, 'invalid_request', 'The tool call arguments are not valid JSON.', { param: `${param}.function.arguments` });
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new ApiError(400, 'invalid_request', 'The tool call arguments must be a JSON object.', { param: `${param}.function.arguments` });
  }
  pending.ids.push(id);
  pending.names.set(id, name);
  const decoded = decodeToolCallId(id);
  const part: Part = { functionCall: { name, args, ...(surface === 'gemini' && decoded.id ? { id: decoded.id } : {}) } };
  // Gemini 3 checks the first call of a turn: its own signature, or Google's escape value for history it never signed.
  const signature = decoded.signature ?? (first && traits.thoughtSignatures ? SKIP_SIGNATURE : undefined);
  if (signature) part.thoughtSignature = signature;
  return part;
}

/** A tool's output as Gemini's `response` object: a JSON object as it is, anything else as `{output}`. */
function toolResponse(text: string): Record<string, unknown> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // Not JSON after all: sent as text.
    }
  }
  return { output: text };
}

/** The text of a content that may only hold text (system, tool, assistant): a string or text parts, joined. */
function textOf(content: unknown, param: string, allowRefusal = false): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part, j) => {
      const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (allowRefusal && p.type === 'refusal' && typeof p.refusal === 'string') return p.refusal;
      throw new ApiError(400, 'unsupported_parameter', `Only text parts can be sent to Gemini in this message; '${String(p.type)}' cannot.`, { param: `${param}[${j}]` });
    })
    .join('');
}

function userParts(content: unknown, i: number): Part[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  content.forEach((part, j) => {
    const param = `messages[${i}].content[${j}]`;
    const p = part as { type?: unknown; text?: unknown; image_url?: { url?: unknown } | string; input_audio?: { data?: unknown; format?: unknown }; file?: { file_data?: unknown; file_id?: unknown; filename?: unknown } };
    if (p.type === 'text') {
      if (typeof p.text === 'string' && p.text) parts.push({ text: p.text });
    } else if (p.type === 'image_url') {
      const url = typeof p.image_url === 'string' ? p.image_url : typeof p.image_url?.url === 'string' ? p.image_url.url : '';
      parts.push(mediaPart(url, `${param}.image_url`));
    } else if (p.type === 'input_audio') {
      const data = typeof p.input_audio?.data === 'string' ? p.input_audio.data : '';
      const format = typeof p.input_audio?.format === 'string' ? p.input_audio.format : '';
      if (!data || !format) throw new ApiError(400, 'invalid_request', 'input_audio needs data and format.', { param: `${param}.input_audio` });
      parts.push({ inlineData: { mimeType: `audio/${format}`, data } });
    } else if (p.type === 'file') {
      if (typeof p.file?.file_data === 'string') parts.push(mediaPart(p.file.file_data, `${param}.file.file_data`));
      else throw new ApiError(400, 'unsupported_parameter', 'Files are sent to Gemini inline (file_data as a data URL); an OpenAI file_id cannot be resolved.', { param: `${param}.file` });
    } else {
      throw new ApiError(400, 'unsupported_parameter', `Content parts of type '${String(p.type)}' cannot be sent to Gemini.`, { param });
    }
  });
  return parts;
}

/**
 * A data URL inline, a `gs://` object by reference. An http(s) URL was fetched and inlined before the
 * translation (upstream/with-remote-images.ts) unless that is switched off: then it is refused.
 */
function mediaPart(url: string, param: string): Part {
  const data = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  if (data) {
    const mimeType = data[1].toLowerCase() === 'image/jpg' ? 'image/jpeg' : data[1].toLowerCase();
    return { inlineData: { mimeType, data: data[2] } };
  }
  if (url.startsWith('gs://')) {
    const extension = /\.([a-z0-9]+)$/i.exec(url)?.[1]?.toLowerCase() ?? '';
    const mimeType = IMAGE_MIME[extension];
    if (!mimeType) throw new ApiError(400, 'invalid_request', `The media type of '${url}' cannot be told from its name (.png, .jpg, .gif, .webp, .heic, .pdf).`, { param });
    return { fileData: { mimeType, fileUri: url } };
  }
  throw new ApiError(400, 'unsupported_parameter', 'Gemini takes images as base64 data URLs (data:image/png;base64,…) or gs:// objects; the gateway fetches http(s) URLs for image_url parts only, and only when TOLLGATE_FETCH_IMAGE_URLS is on.', { param });
}
