// The Responses API's `input` → engine Turns. A string is one user message; an array holds items:
// messages (`{role, content}`, optionally `type: "message"`), the model's own earlier function calls
// (`function_call`) and the client's results for them (`function_call_output`). Each failure is a 400
// naming the wire path (input[2].call_id …). Fields this parser does not read are tolerated inside
// items, because clients routinely pass a previous response's `output` items back verbatim, with ids,
// statuses and whatever their SDK added.
import { invalidType, invalidValue, missingParam } from '../http/errors.ts';
import type { JsonObject } from '../http/body.ts';
import { isObject } from '../http/params.ts';
import type { ToolCall, Turn } from './conversation.ts';
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
}

const IMAGE_DETAILS = new Set(['auto', 'low', 'high', 'original']);

export function parseInput(value: unknown): ParsedInput {
  if (value === undefined || value === null) throw missingParam('input');
  if (typeof value === 'string') return { turns: [{ role: 'user', text: value, images: [] }], callOutputs: [] };
  if (!Array.isArray(value)) throw invalidType('input', 'a string or an array of input items');
  if (value.length === 0) throw invalidValue('input', "Invalid 'input': empty array. Expected a string or at least one input item.");
  const parsed: ParsedInput = { turns: [], callOutputs: [] };
  value.forEach((item, i) => addItem(parsed, item, `input[${i}]`));
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

function addItem(parsed: ParsedInput, item: unknown, path: string): void {
  if (!isObject(item)) throw invalidType(path, 'an object');
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message':
      parsed.turns.push(parseMessage(item, path));
      return;
    case 'function_call':
      addFunctionCall(parsed.turns, parseFunctionCall(item, path));
      return;
    case 'function_call_output':
      parsed.callOutputs.push({ callId: requiredText(item, 'call_id', path), turnIndex: parsed.turns.length, param: `${path}.call_id` });
      parsed.turns.push({ role: 'tool', toolCallId: item.call_id as string, text: callOutputText(item.output, `${path}.output`) });
      return;
    case undefined:
      throw missingParam(`${path}.type`);
    case 'item_reference':
      throw invalidValue(`${path}.type`, `Invalid '${path}': service-test does not resolve item references; pass the item itself, or continue with 'previous_response_id'.`);
    default:
      throw invalidValue(`${path}.type`, `Invalid value for '${path}.type': '${String(type)}'. service-test accepts 'message', 'function_call' and 'function_call_output' items.`);
  }
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

function parseMessage(item: JsonObject, path: string): Turn {
  const role = item.role;
  if (role === undefined) throw missingParam(`${path}.role`);
  const contentPath = `${path}.content`;
  switch (role) {
    case 'user': {
      const images: DescribedImage[] = [];
      return { role: 'user', text: inputContent(item.content, contentPath, images), images };
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

/** Text (and, where `images` is given, input_image) parts of a user, system or developer message. */
function inputContent(content: unknown, path: string, images?: DescribedImage[]): string {
  if (content === undefined || content === null) throw missingParam(path);
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidType(path, 'a string or an array of content parts');
  const texts: string[] = [];
  content.forEach((part, i) => {
    const partPath = `${path}[${i}]`;
    if (!isObject(part)) throw invalidType(partPath, 'an object');
    if (part.type === 'input_text') texts.push(requiredText(part, 'text', partPath));
    else if (part.type === 'input_image' && images) images.push(parseImage(part, partPath));
    else {
      const allowed = images ? "'input_text' and 'input_image'" : "'input_text'";
      throw invalidValue(`${partPath}.type`, `Invalid content part type '${String(part.type)}' in '${partPath}': service-test accepts ${allowed} here.`);
    }
  });
  return texts.join('\n');
}

function parseImage(part: JsonObject, path: string): DescribedImage {
  if (part.detail !== undefined && part.detail !== null && !IMAGE_DETAILS.has(part.detail as string)) {
    throw invalidValue(`${path}.detail`, `Invalid value for '${path}.detail': expected 'auto', 'low', 'high' or 'original'.`);
  }
  if (part.image_url === undefined || part.image_url === null) {
    if (part.file_id !== undefined && part.file_id !== null) {
      throw invalidValue(`${path}.file_id`, `Invalid '${path}': service-test does not read uploaded files; send the image as 'image_url' (a URL or a Data URL).`);
    }
    throw missingParam(`${path}.image_url`);
  }
  return describeImageUrl(part.image_url, `${path}.image_url`);
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
