// POST /v1/responses body → what service-test needs: the parsed input, the engine's tools, tool
// choice and output format, and the settings a Response object echoes back. Every check fails as a
// 400 naming the parameter by its wire path, before any answer is produced.
import type { JsonObject } from '../http/body.ts';
import { ApiError, invalidType, invalidValue, missingParam, unknownParam } from '../http/errors.ts';
import { isObject, optionalBoolean, optionalNumber, optionalObject, optionalString, rejectUnknown } from '../http/params.ts';
import type { Conversation, OutputFormat, ToolChoice, ToolSpec, Turn } from './conversation.ts';
import { checkCallOutputs, NO_CONTEXT, parseInput, type InputContext, type ParsedInput } from './responses-input.ts';

const KNOWN = new Set([
  'model', 'input', 'instructions', 'previous_response_id', 'store', 'stream', 'stream_options', 'tools', 'tool_choice',
  'parallel_tool_calls', 'max_output_tokens', 'max_tool_calls', 'temperature', 'top_p', 'top_logprobs', 'text', 'metadata',
  'user', 'truncation', 'reasoning', 'include', 'service_tier', 'safety_identifier', 'prompt_cache_key',
  'prompt_cache_retention', 'background', 'conversation', 'prompt', 'access_programs', 'background_options',
  // Accepted and ignored (docs/service-test.md): they change nothing in a deterministic text answer.
  'prompt_cache_options', 'context_management', 'moderation', 'image',
]);
const CACHE_RETENTIONS = new Set(['in_memory', '24h']);
const CYBER_PROGRAMS = new Set(['standard', 'daybreak_blue', 'daybreak_red']);
const COMPLETION_WINDOWS = new Set(['soonest', '2h', '8h']);

const INCLUDABLE = new Set([
  'file_search_call.results', 'web_search_call.results', 'web_search_call.action.sources', 'message.input_image.image_url',
  'computer_call_output.output.image_url', 'code_interpreter_call.outputs', 'reasoning.encrypted_content', 'message.output_text.logprobs',
]);
const SERVICE_TIERS = new Set(['auto', 'default', 'flex', 'scale', 'priority']);
/** OpenAI refuses smaller limits on Responses; service-test does the same so limits behave alike. */
export const MIN_OUTPUT_TOKENS = 16;

export interface FunctionToolEcho {
  type: 'function';
  name: string;
  description: string | null;
  parameters: JsonObject | null;
  strict: boolean;
}

export type TextFormatEcho =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonObject; description?: string; strict: boolean | null };

/** The request's settings exactly as the Response object repeats them. */
export interface ResponseSettings {
  /** The access programs asked for; null is OpenAI's implicit Standard. */
  access_programs: { cyber: string } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  max_tool_calls: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  safety_identifier: string | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: TextFormatEcho; verbosity: string };
  tool_choice: 'auto' | 'none' | 'required' | { type: 'function'; name: string };
  tools: FunctionToolEcho[];
  top_logprobs: number;
  top_p: number;
  truncation: 'auto' | 'disabled';
  user: string | null;
}

export interface ResponsesRequest {
  input: ParsedInput;
  stream: boolean;
  settings: ResponseSettings;
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  format: OutputFormat;
}

/** `context`: the caller's files and stored items that `input` may name (file_id, item_reference). */
export function parseResponsesRequest(body: JsonObject, context: InputContext = NO_CONTEXT): ResponsesRequest {
  rejectUnknown(body, KNOWN);
  rejectUnsupported(body);
  const input = parseInput(body.input, context);
  const stream = optionalBoolean(body, 'stream') ?? false;
  if (optionalObject(body, 'stream_options') && !stream) throw invalidValue('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  const previous = optionalString(body, 'previous_response_id');
  if (previous === '') throw invalidValue('previous_response_id', "Invalid 'previous_response_id': empty string.");
  const { tools, echo: toolsEcho } = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  const { format, echo: formatEcho, verbosity } = parseText(body.text);
  parseInclude(body.include);
  const reasoning = optionalObject(body, 'reasoning');
  if (reasoning && reasoning.effort !== undefined && reasoning.effort !== null && typeof reasoning.effort !== 'string') throw invalidType('reasoning.effort', 'a string');
  const serviceTier = optionalString(body, 'service_tier');
  if (serviceTier !== undefined && !SERVICE_TIERS.has(serviceTier)) throw invalidValue('service_tier', "Invalid 'service_tier': expected 'auto', 'default', 'flex', 'scale' or 'priority'.");
  const truncation = optionalString(body, 'truncation') ?? 'disabled';
  if (truncation !== 'auto' && truncation !== 'disabled') throw invalidValue('truncation', "Invalid 'truncation': expected 'auto' or 'disabled'.");
  const retention = optionalString(body, 'prompt_cache_retention');
  if (retention !== undefined && !CACHE_RETENTIONS.has(retention)) throw invalidValue('prompt_cache_retention', "Invalid 'prompt_cache_retention': expected 'in_memory' or '24h'.");
  const accessPrograms = parseAccessPrograms(body.access_programs);
  parseBackgroundOptions(body.background_options);
  return {
    input,
    stream,
    tools,
    toolChoice: toolChoice.engine,
    format,
    settings: {
      access_programs: accessPrograms,
      instructions: optionalString(body, 'instructions') ?? null,
      max_output_tokens: optionalNumber(body, 'max_output_tokens', { min: MIN_OUTPUT_TOKENS, integer: true }) ?? null,
      max_tool_calls: optionalNumber(body, 'max_tool_calls', { min: 1, integer: true }) ?? null,
      metadata: parseMetadata(body.metadata),
      parallel_tool_calls: optionalBoolean(body, 'parallel_tool_calls') ?? true,
      previous_response_id: previous ?? null,
      prompt_cache_key: optionalString(body, 'prompt_cache_key') ?? null,
      safety_identifier: optionalString(body, 'safety_identifier') ?? null,
      service_tier: 'default',
      store: optionalBoolean(body, 'store') ?? true,
      temperature: optionalNumber(body, 'temperature', { min: 0, max: 2 }) ?? 1,
      text: { format: formatEcho, verbosity },
      tool_choice: toolChoice.echo,
      tools: toolsEcho,
      top_logprobs: optionalNumber(body, 'top_logprobs', { min: 0, max: 20, integer: true }) ?? 0,
      top_p: optionalNumber(body, 'top_p', { min: 0, max: 1 }) ?? 1,
      truncation,
      user: optionalString(body, 'user') ?? null,
    },
  };
}

/**
 * The engine's view: instructions first (they belong to this request only and are never carried
 * over by previous_response_id), then the stored history, then the new input.
 */
export function conversationFor(request: ResponsesRequest, history: Turn[]): Conversation {
  checkCallOutputs(history, request.input);
  const { instructions, parallel_tool_calls: parallelToolCalls } = request.settings;
  const turns: Turn[] = [...(instructions !== null ? [{ role: 'system' as const, text: instructions }] : []), ...history, ...request.input.turns];
  return { turns, tools: request.tools, toolChoice: request.toolChoice, parallelToolCalls, format: request.format };
}

/** Parameters OpenAI knows that service-test cannot honour: refused rather than silently ignored. */
function rejectUnsupported(body: JsonObject): void {
  if (optionalBoolean(body, 'background')) {
    throw new ApiError(400, 'unsupported_parameter', "service-test answers synchronously; 'background' mode is not supported. Omit it or set it to false.", { param: 'background' });
  }
  for (const name of ['conversation', 'prompt']) {
    if (body[name] !== undefined && body[name] !== null) {
      const what = name === 'conversation' ? 'the Conversations API' : 'stored prompt templates';
      throw new ApiError(400, 'unsupported_parameter', `service-test does not support ${what} ('${name}'). Pass the history in 'input' or use 'previous_response_id'.`, { param: name });
    }
  }
}

/** `{cyber?}`: echoed as asked; every program answers alike in service-test. */
function parseAccessPrograms(value: unknown): { cyber: string } | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw invalidType('access_programs', 'an object');
  for (const key of Object.keys(value)) if (key !== 'cyber') throw unknownParam(`access_programs.${key}`);
  if (value.cyber === undefined) return null;
  if (typeof value.cyber !== 'string' || !CYBER_PROGRAMS.has(value.cyber)) {
    throw invalidValue('access_programs.cyber', "Invalid 'access_programs.cyber': expected 'standard', 'daybreak_blue' or 'daybreak_red'.");
  }
  return { cyber: value.cyber };
}

/** `{completion_window?, continuation_id?}`: the discounted windows need background mode, which service-test refuses. */
function parseBackgroundOptions(value: unknown): void {
  if (value === undefined || value === null) return;
  if (!isObject(value)) throw invalidType('background_options', 'an object');
  for (const key of Object.keys(value)) if (key !== 'completion_window' && key !== 'continuation_id') throw unknownParam(`background_options.${key}`);
  const window = value.completion_window;
  if (window !== undefined && (typeof window !== 'string' || !COMPLETION_WINDOWS.has(window))) {
    throw invalidValue('background_options.completion_window', "Invalid 'background_options.completion_window': expected 'soonest', '2h' or '8h'.");
  }
  if (value.continuation_id !== undefined && typeof value.continuation_id !== 'string') throw invalidType('background_options.continuation_id', 'a string');
  if (window === '2h' || window === '8h') {
    throw new ApiError(400, 'unsupported_parameter', `The '${window}' completion window needs 'background': true, and service-test answers synchronously. Omit it or use 'soonest'.`, { param: 'background_options.completion_window' });
  }
}

function parseTools(value: unknown): { tools: ToolSpec[]; echo: FunctionToolEcho[] } {
  if (value === undefined || value === null) return { tools: [], echo: [] };
  if (!Array.isArray(value)) throw invalidType('tools', 'an array');
  const names = new Set<string>();
  const echo = value.map((tool, i): FunctionToolEcho => {
    const path = `tools[${i}]`;
    if (!isObject(tool)) throw invalidType(path, 'an object');
    if (tool.type === undefined) throw missingParam(`${path}.type`);
    if (tool.type !== 'function') throw invalidValue(`${path}.type`, `Invalid '${path}.type': '${String(tool.type)}'. service-test supports tools of type 'function'.`);
    // A Chat Completions tool sent here by mistake: say so, since the flat shape is the usual surprise.
    if (tool.name === undefined && isObject(tool.function)) {
      throw new ApiError(400, 'missing_required_parameter', `Missing required parameter: '${path}.name'. Responses tools are flat ({"type":"function","name":…,"parameters":…}); the nested 'function' object is the Chat Completions shape.`, { param: `${path}.name` });
    }
    const { name, description, parameters, strict } = tool;
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw invalidValue(`${path}.name`, `Invalid '${path}.name': expected 1 to 64 letters, digits, underscores or dashes.`);
    }
    if (names.has(name)) throw invalidValue(`${path}.name`, `Duplicate function name '${name}' in tools.`);
    names.add(name);
    if (description !== undefined && description !== null && typeof description !== 'string') throw invalidType(`${path}.description`, 'a string');
    if (parameters !== undefined && parameters !== null && !isObject(parameters)) throw invalidType(`${path}.parameters`, 'a JSON Schema object');
    if (strict !== undefined && strict !== null && typeof strict !== 'boolean') throw invalidType(`${path}.strict`, 'a boolean');
    // Responses functions are strict unless the client says otherwise.
    return { type: 'function', name, description: (description as string | undefined) ?? null, parameters: (parameters as JsonObject | undefined) ?? null, strict: (strict as boolean | undefined) ?? true };
  });
  const tools = echo.map((t) => ({ name: t.name, description: t.description ?? undefined, parameters: t.parameters ?? undefined }));
  return { tools, echo };
}

function parseToolChoice(value: unknown, tools: ToolSpec[]): { engine: ToolChoice; echo: ResponseSettings['tool_choice'] } {
  if (value === undefined || value === null) return { engine: 'auto', echo: 'auto' };
  if (value === 'auto' || value === 'none' || value === 'required') {
    if (value === 'required' && tools.length === 0) throw invalidValue('tool_choice', "Invalid 'tool_choice': 'required' needs at least one tool in 'tools'.");
    return { engine: value, echo: value };
  }
  if (isObject(value) && value.type === 'function' && typeof value.name === 'string') {
    const name = value.name;
    if (!tools.some((t) => t.name === name)) throw invalidValue('tool_choice.name', `Invalid 'tool_choice': no function named '${name}' in 'tools'.`);
    return { engine: { name }, echo: { type: 'function', name } };
  }
  throw invalidValue('tool_choice', "Invalid 'tool_choice': expected 'none', 'auto', 'required' or {\"type\":\"function\",\"name\":…}.");
}

function parseText(value: unknown): { format: OutputFormat; echo: TextFormatEcho; verbosity: string } {
  if (value === undefined || value === null) return { format: { type: 'text' }, echo: { type: 'text' }, verbosity: 'medium' };
  if (!isObject(value)) throw invalidType('text', 'an object');
  const verbosity = optionalString(value, 'verbosity') ?? 'medium';
  if (!['low', 'medium', 'high'].includes(verbosity)) throw invalidValue('text.verbosity', "Invalid 'text.verbosity': expected 'low', 'medium' or 'high'.");
  const spec = value.format;
  if (spec === undefined || spec === null) return { format: { type: 'text' }, echo: { type: 'text' }, verbosity };
  if (!isObject(spec)) throw invalidType('text.format', 'an object');
  if (spec.type === 'text' || spec.type === 'json_object') return { format: { type: spec.type }, echo: { type: spec.type }, verbosity };
  if (spec.type === 'json_schema') {
    if (spec.name === undefined) throw missingParam('text.format.name');
    if (typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) throw invalidValue('text.format.name', "Invalid 'text.format.name': expected 1 to 64 letters, digits, underscores or dashes.");
    if (spec.schema === undefined) throw missingParam('text.format.schema');
    if (!isObject(spec.schema)) throw invalidType('text.format.schema', 'a JSON Schema object');
    if (spec.description !== undefined && spec.description !== null && typeof spec.description !== 'string') throw invalidType('text.format.description', 'a string');
    if (spec.strict !== undefined && spec.strict !== null && typeof spec.strict !== 'boolean') throw invalidType('text.format.strict', 'a boolean');
    return {
      format: { type: 'json_schema', name: spec.name, schema: spec.schema },
      // A description is repeated only when one was given: OpenAI's schema types it as a string, never null.
      echo: { type: 'json_schema', name: spec.name, schema: spec.schema, ...(typeof spec.description === 'string' ? { description: spec.description } : {}), strict: (spec.strict as boolean | undefined) ?? null },
      verbosity,
    };
  }
  if (spec.type === undefined) throw missingParam('text.format.type');
  throw invalidValue('text.format.type', "Invalid 'text.format.type': expected 'text', 'json_object' or 'json_schema'.");
}

function parseInclude(value: unknown): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value)) throw invalidType('include', 'an array of strings');
  value.forEach((entry, i) => {
    if (typeof entry !== 'string') throw invalidType(`include[${i}]`, 'a string');
    if (!INCLUDABLE.has(entry)) throw invalidValue(`include[${i}]`, `Invalid value for 'include[${i}]': '${entry}'. Supported values are: ${[...INCLUDABLE].map((v) => `'${v}'`).join(', ')}.`);
  });
}

/** OpenAI's limits: at most 16 pairs, keys up to 64 characters, string values up to 512. */
function parseMetadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw invalidType('metadata', 'an object of string values');
  const entries = Object.entries(value);
  if (entries.length > 16) throw invalidValue('metadata', "Invalid 'metadata': at most 16 key-value pairs.");
  for (const [key, entry] of entries) {
    if (key.length > 64) throw invalidValue('metadata', `Invalid 'metadata': the key '${key.slice(0, 64)}…' is longer than 64 characters.`);
    if (typeof entry !== 'string') throw invalidType(`metadata.${key}`, 'a string');
    if (entry.length > 512) throw invalidValue(`metadata.${key}`, `Invalid 'metadata.${key}': longer than 512 characters.`);
  }
  return value as Record<string, string>;
}
