// Chat Completions request → Conversation, with the checks OpenAI makes, each failing as a 400 that
// names the parameter by its wire path (messages[2].tool_call_id …).
import { invalidType, invalidValue, missingParam } from '../http/errors.ts';
import type { JsonObject } from '../http/body.ts';
import { isObject, optionalBoolean, optionalNumber, optionalObject, optionalString, rejectUnknown } from '../http/params.ts';
import type { Conversation, OutputFormat, ToolCall, ToolChoice, ToolSpec, Turn } from './conversation.ts';
import { describeFileData, describeStoredFile, NO_FILES, unknownFile, type DescribedFile, type FileLookup } from './file-inputs.ts';
import { describeImageUrl, type DescribedImage } from './vision.ts';

/** Where a user message's attachments go while its parts are read. */
interface Attachments {
  images: DescribedImage[];
  files: DescribedFile[];
  lookup: FileLookup;
}

const KNOWN = new Set([
  'model', 'messages', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tokens',
  'max_completion_tokens', 'temperature', 'top_p', 'n', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias',
  'logprobs', 'top_logprobs', 'user', 'seed', 'response_format', 'metadata', 'store', 'service_tier', 'reasoning_effort',
  'verbosity', 'safety_identifier', 'prompt_cache_key', 'modalities', 'prediction', 'web_search_options',
  // Accepted and ignored (docs/service-test.md): caching, moderation and audio output change nothing
  // in a deterministic text answer; the deprecated functions/function_call are checked for shape only.
  'prompt_cache_retention', 'prompt_cache_options', 'moderation', 'audio', 'functions', 'function_call',
]);
const CACHE_RETENTIONS = new Set(['in_memory', '24h']);

export interface ChatOptions {
  n: number;
  maxTokens: number | undefined;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  topLogprobs: number;
}

export interface ChatRequest {
  conversation: Conversation;
  options: ChatOptions;
}

/** `files`: the caller's uploaded files that the body names (file-inputs.ts resolveFileIds). */
export function parseChatRequest(body: JsonObject, files: FileLookup = NO_FILES): ChatRequest {
  rejectUnknown(body, KNOWN);
  const retention = optionalString(body, 'prompt_cache_retention');
  if (retention !== undefined && !CACHE_RETENTIONS.has(retention)) throw invalidValue('prompt_cache_retention', "Invalid 'prompt_cache_retention': expected 'in_memory' or '24h'.");
  if (body.functions !== undefined && body.functions !== null && !Array.isArray(body.functions)) throw invalidType('functions', 'an array');
  const messages = body.messages;
  if (messages === undefined) throw missingParam('messages');
  if (!Array.isArray(messages)) throw invalidType('messages', 'an array');
  if (messages.length === 0) throw invalidValue('messages', "Invalid 'messages': empty array. Expected an array with at least one message.");
  const turns = messages.map((m, i) => parseMessage(m, `messages[${i}]`, files));
  checkToolReplies(turns);
  const tools = parseTools(body.tools);
  const { stream, includeUsage } = parseStreamAndSampling(body);
  const maxTokens = optionalNumber(body, 'max_completion_tokens', { min: 1, integer: true }) ?? optionalNumber(body, 'max_tokens', { min: 1, integer: true });
  const logprobs = optionalBoolean(body, 'logprobs') ?? false;
  const topLogprobs = optionalNumber(body, 'top_logprobs', { min: 0, max: 20, integer: true });
  if (topLogprobs !== undefined && !logprobs) throw invalidValue('top_logprobs', "'top_logprobs' requires 'logprobs' to be true.");
  return {
    conversation: {
      turns,
      tools,
      toolChoice: parseToolChoice(body.tool_choice, tools),
      parallelToolCalls: optionalBoolean(body, 'parallel_tool_calls') ?? true,
      format: parseResponseFormat(body.response_format),
    },
    options: {
      n: optionalNumber(body, 'n', { min: 1, max: 8, integer: true }) ?? 1,
      maxTokens,
      stop: parseStop(body.stop),
      stream,
      includeUsage,
      logprobs,
      topLogprobs: topLogprobs ?? 0,
    },
  };
}

function parseMessage(value: unknown, path: string, files: FileLookup): Turn {
  if (!isObject(value)) throw invalidType(path, 'an object');
  const role = value.role;
  if (role === undefined) throw missingParam(`${path}.role`);
  switch (role) {
    case 'system':
    case 'developer':
      return { role: role as 'system' | 'developer', text: textContent(value.content, `${path}.content`, true) };
    case 'user': {
      const attachments: Attachments = { images: [], files: [], lookup: files };
      const text = textContent(value.content, `${path}.content`, true, attachments);
      return { role: 'user', text, images: attachments.images, files: attachments.files };
    }
    case 'assistant': {
      const toolCalls = parseToolCalls(value.tool_calls, `${path}.tool_calls`);
      const hasContent = value.content !== undefined && value.content !== null;
      if (!hasContent && toolCalls.length === 0) throw missingParam(`${path}.content`);
      return { role: 'assistant', text: hasContent ? textContent(value.content, `${path}.content`, false) : '', toolCalls };
    }
    case 'tool': {
      if (value.tool_call_id === undefined) throw missingParam(`${path}.tool_call_id`);
      if (typeof value.tool_call_id !== 'string') throw invalidType(`${path}.tool_call_id`, 'a string');
      return { role: 'tool', toolCallId: value.tool_call_id, text: textContent(value.content, `${path}.content`, false) };
    }
    default:
      throw invalidValue(`${path}.role`, `Invalid value for '${path}.role': '${String(role)}'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.`);
  }
}

/** A string, or an array of content parts (text; image_url, file and input_audio only where `attachments` is given). */
function textContent(content: unknown, path: string, required: boolean, attachments?: Attachments): string {
  if (content === undefined || content === null) {
    if (required) throw missingParam(path);
    return '';
  }
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidType(path, 'a string or an array of content parts');
  const texts: string[] = [];
  content.forEach((part, i) => {
    const partPath = `${path}[${i}]`;
    if (!isObject(part)) throw invalidType(partPath, 'an object');
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw invalidType(`${partPath}.text`, 'a string');
      texts.push(part.text);
    } else if (part.type === 'image_url' && attachments) {
      if (!isObject(part.image_url)) throw invalidType(`${partPath}.image_url`, 'an object with a url');
      const detail = part.image_url.detail;
      if (detail !== undefined && detail !== 'auto' && detail !== 'low' && detail !== 'high') {
        throw invalidValue(`${partPath}.image_url.detail`, `Invalid value for '${partPath}.image_url.detail': expected 'auto', 'low' or 'high'.`);
      }
      attachments.images.push(describeImageUrl(part.image_url.url, `${partPath}.image_url.url`));
    } else if (part.type === 'file' && attachments) {
      attachments.files.push(filePart(part.file, `${partPath}.file`, attachments.lookup));
    } else if (part.type === 'input_audio' && attachments) {
      if (!isObject(part.input_audio)) throw invalidType(`${partPath}.input_audio`, 'an object with data and format');
      attachments.files.push(describeFileData(`data:audio/${String(part.input_audio.format)};base64,${String(part.input_audio.data)}`, null, `${partPath}.input_audio.data`));
    } else {
      const allowed = attachments ? "'text', 'image_url', 'file' or 'input_audio'" : "'text'";
      throw invalidValue(`${partPath}.type`, `Invalid content part type '${String(part.type)}' in '${partPath}': service-test accepts ${allowed} here.`);
    }
  });
  return texts.join('\n');
}

function parseToolCalls(value: unknown, path: string): ToolCall[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidType(path, 'an array');
  return value.map((call, i) => {
    const callPath = `${path}[${i}]`;
    if (!isObject(call)) throw invalidType(callPath, 'an object');
    if (typeof call.id !== 'string') throw missingParam(`${callPath}.id`);
    if (call.type !== undefined && call.type !== 'function') throw invalidValue(`${callPath}.type`, `Invalid '${callPath}.type': expected 'function'.`);
    if (!isObject(call.function) || typeof call.function.name !== 'string') throw missingParam(`${callPath}.function.name`);
    if (typeof call.function.arguments !== 'string') throw invalidType(`${callPath}.function.arguments`, 'a string of JSON');
    return { id: call.id, name: call.function.name, arguments: call.function.arguments };
  });
}

/** Every tool message must answer a call made by an earlier assistant message, as OpenAI enforces. */
function checkToolReplies(turns: Turn[]): void {
  const open = new Set<string>();
  turns.forEach((turn, i) => {
    if (turn.role === 'assistant') for (const call of turn.toolCalls) open.add(call.id);
    if (turn.role === 'tool' && !open.has(turn.toolCallId)) {
      throw invalidValue(`messages[${i}].tool_call_id`, `Invalid 'messages[${i}]': a message with role 'tool' must answer a preceding assistant message's tool_calls; no call has id '${turn.toolCallId}'.`);
    }
  });
}

function parseTools(value: unknown): ToolSpec[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidType('tools', 'an array');
  const names = new Set<string>();
  return value.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isObject(tool)) throw invalidType(path, 'an object');
    if (tool.type !== 'function') throw invalidValue(`${path}.type`, `Invalid '${path}.type': service-test supports tools of type 'function'.`);
    if (!isObject(tool.function)) throw missingParam(`${path}.function`);
    const { name, description, parameters } = tool.function;
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw invalidValue(`${path}.function.name`, `Invalid '${path}.function.name': expected 1 to 64 letters, digits, underscores or dashes.`);
    }
    if (names.has(name)) throw invalidValue(`${path}.function.name`, `Duplicate function name '${name}' in tools.`);
    names.add(name);
    if (description !== undefined && typeof description !== 'string') throw invalidType(`${path}.function.description`, 'a string');
    if (parameters !== undefined && !isObject(parameters)) throw invalidType(`${path}.function.parameters`, 'a JSON Schema object');
    return { name, description: description as string | undefined, parameters: parameters as Record<string, unknown> | undefined };
  });
}

function parseToolChoice(value: unknown, tools: ToolSpec[]): ToolChoice {
  if (value === undefined || value === null) return 'auto';
  if (value === 'auto' || value === 'none' || value === 'required') {
    if (value === 'required' && tools.length === 0) throw invalidValue('tool_choice', "Invalid 'tool_choice': 'required' needs at least one tool in 'tools'.");
    return value;
  }
  if (isObject(value) && value.type === 'function' && isObject(value.function) && typeof value.function.name === 'string') {
    const name = value.function.name;
    if (!tools.some((t) => t.name === name)) throw invalidValue('tool_choice', `Invalid 'tool_choice': no function named '${name}' in 'tools'.`);
    return { name };
  }
  throw invalidValue('tool_choice', "Invalid 'tool_choice': expected 'none', 'auto', 'required' or {\"type\":\"function\",\"function\":{\"name\":…}}.");
}

function parseResponseFormat(value: unknown): OutputFormat {
  if (value === undefined || value === null) return { type: 'text' };
  if (!isObject(value)) throw invalidType('response_format', 'an object');
  if (value.type === 'text' || value.type === 'json_object') return { type: value.type };
  if (value.type === 'json_schema') {
    const spec = value.json_schema;
    if (!isObject(spec) || typeof spec.name !== 'string') throw missingParam('response_format.json_schema.name');
    if (spec.schema !== undefined && !isObject(spec.schema)) throw invalidType('response_format.json_schema.schema', 'a JSON Schema object');
    return { type: 'json_schema', name: spec.name, schema: (spec.schema as Record<string, unknown>) ?? { type: 'object' } };
  }
  throw invalidValue('response_format.type', "Invalid 'response_format.type': expected 'text', 'json_object' or 'json_schema'.");
}

/** `stop`: one sequence or up to four, as chat and the legacy completions endpoint both take it. */
export function parseStop(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string' || s === '')) throw invalidType('stop', 'a non-empty string or an array of them');
  if (list.length > 4) throw invalidValue('stop', "Invalid 'stop': at most 4 sequences.");
  return list as string[];
}

/** A `file` part: inline (file_data, a Data URL) or an uploaded file of this account (file_id). */
function filePart(value: unknown, path: string, lookup: FileLookup): DescribedFile {
  if (!isObject(value)) throw invalidType(path, 'an object with file_data or file_id');
  if (typeof value.file_id === 'string') {
    const stored = lookup.get(value.file_id);
    if (!stored) unknownFile(value.file_id, `${path}.file_id`);
    return describeStoredFile(stored);
  }
  if (value.file_data === undefined || value.file_data === null) throw missingParam(`${path}.file_data`);
  return describeFileData(value.file_data, value.filename, `${path}.file_data`);
}

/**
 * `stream`, `stream_options` and the sampling parameters, which chat and the legacy completions
 * endpoint share: checked as OpenAI checks them; service-test's answers do not depend on sampling.
 */
export function parseStreamAndSampling(body: JsonObject): { stream: boolean; includeUsage: boolean } {
  const stream = optionalBoolean(body, 'stream') ?? false;
  const streamOptions = optionalObject(body, 'stream_options');
  if (streamOptions && !stream) throw invalidValue('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  optionalNumber(body, 'temperature', { min: 0, max: 2 });
  optionalNumber(body, 'top_p', { min: 0, max: 1 });
  optionalNumber(body, 'presence_penalty', { min: -2, max: 2 });
  optionalNumber(body, 'frequency_penalty', { min: -2, max: 2 });
  optionalNumber(body, 'seed', { integer: true });
  return { stream, includeUsage: streamOptions ? (optionalBoolean(streamOptions, 'include_usage') ?? false) : false };
}
