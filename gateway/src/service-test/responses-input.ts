// The Responses API's `input` → engine Turns. A string is one user message; an array holds items:
// messages (`{role, content}`, optionally `type: "message"`), the model's own earlier function calls
// (`function_call`), the client's results for them (`function_call_output`) and references to items
// of the account's stored responses (`item_reference`, what the AI SDK sends for earlier turns). Each failure is a 400
// naming the wire path (input[2].call_id …). Fields this parser does not read are tolerated inside
// items, because clients routinely pass a previous response's `output` items back verbatim, with ids,
// statuses and whatever their SDK added.
import { invalidType, invalidValue, missingParam } from '../http/errors.ts';
import type { JsonObject } from '../http/body.ts';
import { isObject } from '../http/params.ts';
import type { ToolCall, Turn } from './conversation.ts';
import { describeFileData, describeRemoteFile, describeStoredFile, describeStoredImage, NO_FILES, unknownFile, type DescribedFile, type FileLookup } from './file-inputs.ts';
import { randomItemId, type InputItem, type ItemPiece, type StoredItem } from './response-items.ts';
import { describeImageUrl, type DescribedImage } from './vision.ts';

/** A function_call_output still to be matched against the calls in the history. */
export interface CallOutputRef {
  callId: string;
  /** Index of its tool turn in ParsedInput.turns. */
  turnIndex: number;
  param: string;
}

export interface ParsedInput {
  turns: Turn[];
  callOutputs: CallOutputRef[];
  /** The input as items with ids (references replaced by what they name), for input_items and later references. */
  items: InputItem[];
}

/** What `input` may refer to: the caller's uploaded files and the items of its stored responses. */
export interface InputContext {
  files: FileLookup;
  item(id: string): StoredItem | undefined;
}

export const NO_CONTEXT: InputContext = { files: NO_FILES, item: () => undefined };

/** Where a user message's attachments go while its parts are read. */
interface Attachments {
  images: DescribedImage[];
  files: DescribedFile[];
  context: InputContext;
}

const IMAGE_DETAILS = new Set(['auto', 'low', 'high', 'original']);

export function parseInput(value: unknown, context: InputContext = NO_CONTEXT): ParsedInput {
  if (value === undefined || value === null) throw missingParam('input');
  if (typeof value === 'string') {
    const turn: Turn = { role: 'user', text: value, images: [] };
    const wire = { id: randomItemId('msg_'), type: 'message', role: 'user', content: [{ type: 'input_text', text: value }] };
    return { turns: [turn], callOutputs: [], items: [{ wire, piece: { kind: 'turn', turn } }] };
  }
  if (!Array.isArray(value)) throw invalidType('input', 'a string or an array of input items');
  if (value.length === 0) throw invalidValue('input', "Invalid 'input': empty array. Expected a string or at least one input item.");
  const parsed: ParsedInput = { turns: [], callOutputs: [], items: [] };
  value.forEach((item, i) => addItem(parsed, item, `input[${i}]`, context));
  return parsed;
}

/**
 * Every function_call_output must answer a function_call that came before it: in the stored
 * history behind previous_response_id, or earlier in this input. OpenAI refuses orphans too.
 */
export function checkCallOutputs(history: Turn[], input: ParsedInput): void {
  const known = new Set<string>();
  const remember = (turn: Turn) => {
    if (turn.role === 'assistant') for (const call of turn.toolCalls) known.add(call.id);
  };
  history.forEach(remember);
  let next = 0;
  for (const ref of input.callOutputs) {
    while (next < ref.turnIndex) remember(input.turns[next++]);
    if (!known.has(ref.callId)) {
      throw invalidValue(ref.param, `No tool call found for function call output with call_id '${ref.callId}'. A function_call_output must answer a function_call earlier in 'input' or in the response named by 'previous_response_id'.`);
    }
  }
}

function addItem(parsed: ParsedInput, item: unknown, path: string, context: InputContext): void {
  if (!isObject(item)) throw invalidType(path, 'an object');
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  let piece: ItemPiece;
  let prefix: string;
  switch (type) {
    case 'message':
      piece = { kind: 'turn', turn: parseMessage(item, path, context) };
      prefix = 'msg_';
      break;
    case 'function_call':
      piece = { kind: 'call', call: parseFunctionCall(item, path) };
      prefix = 'fc_';
      break;
    case 'function_call_output':
      piece = { kind: 'turn', turn: { role: 'tool', toolCallId: requiredText(item, 'call_id', path), text: callOutputText(item.output, `${path}.output`) } };
      prefix = 'fco_';
      break;
    case undefined:
      throw missingParam(`${path}.type`);
    case 'item_reference': {
      const id = requiredText(item, 'id', path);
      const stored = context.item(id);
      if (!stored) {
        throw invalidValue(`${path}.id`, `Item with id '${id.length > 80 ? `${id.slice(0, 80)}…` : id}' not found. Items are kept with their stored response for a limited time, for the account that created them (not with store: false).`);
      }
      applyPiece(parsed, stored.piece, `${path}.id`);
      parsed.items.push(stored);
      return;
    }
    default:
      throw invalidValue(`${path}.type`, `Invalid value for '${path}.type': '${String(type)}'. service-test accepts 'message', 'function_call', 'function_call_output' and 'item_reference' items.`);
  }
  applyPiece(parsed, piece, `${path}.call_id`);
  const wire = { ...item, type, id: typeof item.id === 'string' && item.id !== '' ? item.id : randomItemId(prefix) };
  parsed.items.push({ wire, piece });
}

function applyPiece(parsed: ParsedInput, piece: ItemPiece, param: string): void {
  if (piece.kind === 'call') return addFunctionCall(parsed.turns, piece.call);
  if (piece.turn.role === 'tool') parsed.callOutputs.push({ callId: piece.turn.toolCallId, turnIndex: parsed.turns.length, param });
  parsed.turns.push(piece.turn);
}

/** Calls in a row belong to one assistant turn, as parallel tool_calls do in Chat Completions. */
function addFunctionCall(turns: Turn[], call: ToolCall): void {
  const last = turns[turns.length - 1];
  if (last?.role === 'assistant') turns[turns.length - 1] = { ...last, toolCalls: [...last.toolCalls, call] };
  else turns.push({ role: 'assistant', text: '', toolCalls: [call] });
}

function parseFunctionCall(item: JsonObject, path: string): ToolCall {
  const callId = requiredText(item, 'call_id', path);
  const name = requiredText(item, 'name', path);
  if (item.arguments === undefined) throw missingParam(`${path}.arguments`);
  if (typeof item.arguments !== 'string') throw invalidType(`${path}.arguments`, 'a string of JSON');
  return { id: callId, name, arguments: item.arguments };
}

function parseMessage(item: JsonObject, path: string, context: InputContext): Turn {
  const role = item.role;
  if (role === undefined) throw missingParam(`${path}.role`);
  const contentPath = `${path}.content`;
  switch (role) {
    case 'user': {
      const attachments: Attachments = { images: [], files: [], context };
      const text = inputContent(item.content, contentPath, attachments);
      return { role: 'user', text, images: attachments.images, files: attachments.files };
    }
    case 'system':
    case 'developer':
      return { role: role as 'system' | 'developer', text: inputContent(item.content, contentPath) };
    case 'assistant':
      return { role: 'assistant', text: assistantContent(item.content, contentPath), toolCalls: [] };
    default:
      throw invalidValue(`${path}.role`, `Invalid value for '${path}.role': '${String(role)}'. Supported values are: 'user', 'assistant', 'system' and 'developer'.`);
  }
}

/** Text (and, where `attachments` is given, input_image and input_file) parts of a user, system or developer message. */
function inputContent(content: unknown, path: string, attachments?: Attachments): string {
  if (content === undefined || content === null) throw missingParam(path);
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidType(path, 'a string or an array of content parts');
  const texts: string[] = [];
  content.forEach((part, i) => {
    const partPath = `${path}[${i}]`;
    if (!isObject(part)) throw invalidType(partPath, 'an object');
    if (part.type === 'input_text') texts.push(requiredText(part, 'text', partPath));
    else if (part.type === 'input_image' && attachments) attachments.images.push(parseImage(part, partPath, attachments.context.files));
    else if (part.type === 'input_file' && attachments) attachments.files.push(parseFile(part, partPath, attachments.context.files));
    else {
      const allowed = attachments ? "'input_text', 'input_image' and 'input_file'" : "'input_text'";
      throw invalidValue(`${partPath}.type`, `Invalid content part type '${String(part.type)}' in '${partPath}': service-test accepts ${allowed} here.`);
    }
  });
  return texts.join('\n');
}

function parseImage(part: JsonObject, path: string, files: FileLookup): DescribedImage {
  if (part.detail !== undefined && part.detail !== null && !IMAGE_DETAILS.has(part.detail as string)) {
    throw invalidValue(`${path}.detail`, `Invalid value for '${path}.detail': expected 'auto', 'low', 'high' or 'original'.`);
  }
  if (part.image_url === undefined || part.image_url === null) {
    if (typeof part.file_id === 'string') {
      const stored = files.get(part.file_id);
      if (!stored) unknownFile(part.file_id, `${path}.file_id`);
      return describeStoredImage(stored, `${path}.file_id`);
    }
    throw missingParam(`${path}.image_url`);
  }
  return describeImageUrl(part.image_url, `${path}.image_url`);
}

/** input_file: inline (file_data), an uploaded file of this account (file_id), or a URL (file_url, not fetched). */
function parseFile(part: JsonObject, path: string, files: FileLookup): DescribedFile {
  if (typeof part.file_id === 'string') {
    const stored = files.get(part.file_id);
    if (!stored) unknownFile(part.file_id, `${path}.file_id`);
    return describeStoredFile(stored);
  }
  if (part.file_data !== undefined && part.file_data !== null) return describeFileData(part.file_data, part.filename, `${path}.file_data`);
  if (part.file_url !== undefined && part.file_url !== null) return describeRemoteFile(part.file_url, `${path}.file_url`);
  throw missingParam(`${path}.file_data`);
}

/** An assistant message from an earlier turn: a string, or output_text / refusal parts. */
function assistantContent(content: unknown, path: string): string {
  if (content === undefined || content === null) throw missingParam(path);
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidType(path, 'a string or an array of content parts');
  return content
    .map((part, i) => {
      const partPath = `${path}[${i}]`;
      if (!isObject(part)) throw invalidType(partPath, 'an object');
      if (part.type === 'output_text') return requiredText(part, 'text', partPath);
      if (part.type === 'refusal') return requiredText(part, 'refusal', partPath);
      throw invalidValue(`${partPath}.type`, `Invalid value: '${String(part.type)}' in '${partPath}.type'. Supported values for assistant content are: 'output_text' and 'refusal'.`);
    })
    .join('\n');
}

/** The client's function result: a string, or input_text parts. */
function callOutputText(output: unknown, path: string): string {
  if (output === undefined || output === null) throw missingParam(path);
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) throw invalidType(path, 'a string or an array of input_text parts');
  return output
    .map((part, i) => {
      const partPath = `${path}[${i}]`;
      if (!isObject(part)) throw invalidType(partPath, 'an object');
      if (part.type !== 'input_text') throw invalidValue(`${partPath}.type`, `Invalid '${partPath}.type': service-test accepts 'input_text' parts in a function call output.`);
      return requiredText(part, 'text', partPath);
    })
    .join('\n');
}

function requiredText(item: JsonObject, field: string, path: string): string {
  const value = item[field];
  if (value === undefined || value === null) throw missingParam(`${path}.${field}`);
  if (typeof value !== 'string') throw invalidType(`${path}.${field}`, 'a string');
  return value;
}
