// Custom (freeform) tools on a model another provider serves. A custom tool is run by the client
// (Codex sends apply_patch as one): the model writes free text as its input. Chat backends know only
// functions, so each custom tool is sent as a function of one string argument, `input`, and the
// model's calls of it come back as `custom_tool_call` items; a client's `custom_tool_call` and
// `custom_tool_call_output` items are replayed as the function call and tool message they stand for.
//
// The request is rewritten into function terms before the Responses parser reads it (so its checks —
// names, tool_choice, call outputs answering calls — hold for custom tools too), and what the client
// sees (the echoed tools and tool_choice, input_items) is given back in its own terms afterwards.
// Reasoning items a client passes back (Codex does, every turn) are left out on the way: they carry
// a model's hidden state, which no other backend can use.
import { ApiError } from '../../http/errors.ts';
import type { ResponsesRequest } from '../../service-test/responses-request.ts';
import { outputItems, type StoredItem } from '../../service-test/response-items.ts';

type Json = Record<string, any>;

/**
 * The tools a chat backend can be told about: the client runs them. Every other type is refused:
 * tools only OpenAI's platform runs (web search, file search, code interpreter, computer use, image
 * generation, remote MCP), and the shell and patch tools whose call items only OpenAI's own models
 * emit (local_shell, shell, apply_patch; Codex gives other models function and custom tools instead).
 */
const CLIENT_TOOLS = new Set(['function', 'custom']);

export function rejectBuiltInTools(body: Json): void {
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool: Json, i: number) => {
    const type = tool?.type;
    if (typeof type === 'string' && !CLIENT_TOOLS.has(type)) {
      throw new ApiError(400, 'unsupported_value', `tools[${i}]: the built-in tool '${type}' is run by OpenAI (or emitted only by OpenAI's own models) and is not available on this model, which another provider serves. Use function tools or custom tools.`, { param: `tools[${i}].type` });
    }
  });
}

/** The one-argument function a custom tool is sent as. */
const INPUT_PARAMETERS = { type: 'object', properties: { input: { type: 'string', description: 'The whole input for the tool, as free text.' } }, required: ['input'], additionalProperties: false };

export interface CustomTools {
  /** The client's custom tools by name, as it sent them (what the Response echoes). */
  byName: Map<string, Json>;
  /** The body in function terms, for the parser. */
  body: Json;
  /** For each input item the parser sees, its place in the client's `input`. */
  positions: number[];
}

/** The request body with custom tools, tool_choice and custom items in function terms. */
export function withCustomToolsAsFunctions(body: Json): CustomTools {
  const byName = new Map<string, Json>();
  if (!Array.isArray(body.tools) && !Array.isArray(body.input)) return { byName, body, positions: [] };
  const tools = Array.isArray(body.tools) ? body.tools.map((tool: Json, i: number) => (tool?.type === 'custom' ? functionOf(tool, i, byName) : tool)) : body.tools;
  const choice = body.tool_choice;
  const toolChoice = choice && typeof choice === 'object' && choice.type === 'custom' ? { type: 'function', name: choice.name } : choice;
  if (!Array.isArray(body.input)) return { byName, body: { ...body, tools, tool_choice: toolChoice }, positions: [] };
  const positions: number[] = [];
  const input: Json[] = [];
  body.input.forEach((item: Json, i: number) => {
    if (item?.type === 'reasoning') return;
    positions.push(i);
    input.push(functionItemOf(item));
  });
  // Reasoning alone: the parser's own error for an empty input says what is missing.
  return { byName, body: { ...body, tools, tool_choice: toolChoice, input }, positions };
}

function functionOf(tool: Json, i: number, byName: Map<string, Json>): Json {
  const name = tool.name;
  if (typeof name === 'string') byName.set(name, tool);
  const format = tool.format;
  let description = typeof tool.description === 'string' ? tool.description : '';
  if (format && typeof format === 'object' && format.type === 'grammar') {
    if (typeof format.definition !== 'string' || (format.syntax !== 'lark' && format.syntax !== 'regex')) {
      throw new ApiError(400, 'invalid_value', `tools[${i}].format: a grammar needs 'syntax' ('lark' or 'regex') and its 'definition' as a string.`, { param: `tools[${i}].format` });
    }
    // No chat backend enforces a grammar: the model is told it, and the client still checks the input.
    description += `${description ? '\n\n' : ''}The input must match this ${format.syntax === 'lark' ? 'Lark grammar' : 'regular expression'}:\n${format.definition}`;
  } else if (format !== undefined && format !== null && !(typeof format === 'object' && format.type === 'text')) {
    throw new ApiError(400, 'invalid_value', `tools[${i}].format: expected {"type":"text"} or {"type":"grammar",…}.`, { param: `tools[${i}].format` });
  }
  return { type: 'function', name, ...(description ? { description } : {}), parameters: INPUT_PARAMETERS, strict: true };
}

function functionItemOf(item: Json): Json {
  if (item?.type === 'custom_tool_call') return { ...item, type: 'function_call', arguments: JSON.stringify({ input: typeof item.input === 'string' ? item.input : '' }) };
  if (item?.type === 'custom_tool_call_output') return { ...item, type: 'function_call_output' };
  return item;
}

/** After parsing: the echoed tools and tool_choice, and the input items, as the client sent them. */
export function restoreCustomTools(request: ResponsesRequest, original: Json, custom: CustomTools): void {
  if (custom.byName.size > 0) {
    const settings = request.settings as Json;
    settings.tools = settings.tools.map((tool: Json) => custom.byName.get(tool.name) ?? tool);
    if (original.tool_choice?.type === 'custom') settings.tool_choice = { type: 'custom', name: original.tool_choice.name };
  }
  if (!Array.isArray(original.input)) return;
  custom.positions.forEach((at, i) => {
    const item = original.input[at];
    const parsed = request.input.items[i];
    if (parsed && (item?.type === 'custom_tool_call' || item?.type === 'custom_tool_call_output')) parsed.wire = { ...item, id: parsed.wire.id };
  });
}

/** A Response's output items (reasoning left out) as stored items for later item_references. */
export function storedOutputItems(output: readonly Json[]): StoredItem[] {
  return output
    .filter((item) => item.type !== 'reasoning')
    .map((item) => {
      if (item.type !== 'custom_tool_call') return outputItems([item as never])[0];
      return { wire: item, piece: { kind: 'call', call: { id: item.call_id, name: item.name, arguments: JSON.stringify({ input: item.input }) } } };
    });
}
