// A Responses request for a model whose provider has no Responses API (Anthropic, Gemini, Vertex AI,
// Bedrock, or an OpenAI-compatible upstream marked `responsesAPI: false`), as the chat completions
// request those backends answer. The request is checked as service-test checks it (its parser gives
// the settings a Response echoes and the input items with their ids, item references resolved); the
// wire items are then turned into chat messages, after the stored history of previous_response_id.
import { ApiError } from '../../http/errors.ts';
import type { ResponsesRequest } from '../../service-test/responses-request.ts';

type Json = Record<string, any>;

/** The chat messages of one request's input items (wire form, ids assigned, references resolved). */
export function inputMessages(items: readonly Json[]): Json[] {
  const messages: Json[] = [];
  items.forEach((item, i) => {
    const type = item.type ?? 'message';
    if (type === 'message') messages.push(messageOf(item, `input[${i}]`));
    else if (type === 'function_call' || type === 'custom_tool_call') {
      // A custom tool is sent to the backend as a function of one string argument (custom-tools.ts).
      const args = type === 'function_call' ? String(item.arguments ?? '') : JSON.stringify({ input: String(item.input ?? '') });
      const call = { id: String(item.call_id), type: 'function', function: { name: String(item.name), arguments: args } };
      const last = messages.at(-1);
      // Calls in a row are one assistant turn's parallel calls.
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) last.tool_calls.push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: typeof item.output === 'string' ? item.output : textOf(item.output) });
    }
    // Reasoning items carry another model's hidden state: nothing another backend can use.
  });
  return messages;
}

function messageOf(item: Json, at: string): Json {
  const role = item.role === 'developer' ? 'system' : item.role;
  if (typeof item.content === 'string') return { role, content: item.content };
  if (!Array.isArray(item.content)) return { role, content: '' };
  if (role === 'assistant') return { role, content: item.content.map((part: Json) => String(part.text ?? part.refusal ?? '')).join('') };
  const parts = item.content.map((part: Json, j: number) => partOf(part, `${at}.content[${j}]`));
  // Text alone is sent as a string: what every chat backend takes, whatever it does with parts.
  const textOnly = parts.every((p: Json) => p.type === 'text');
  return { role, content: role === 'user' && !textOnly ? parts : parts.map((p: Json) => p.text ?? '').join('') };
}

function partOf(part: Json, at: string): Json {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: String(part.text ?? '') };
    case 'input_image':
      if (typeof part.image_url === 'string') return { type: 'image_url', image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } };
      break;
    case 'input_file':
      if (typeof part.file_data === 'string') return { type: 'file', file: { filename: part.filename ?? 'file', file_data: part.file_data } };
      break;
  }
  throw new ApiError(400, 'unsupported_value', `${at}: this part cannot be sent to a model that another provider serves (file ids and file URLs are OpenAI's; send the content inline as a data URL).`, { param: at });
}

function textOf(output: unknown): string {
  if (!Array.isArray(output)) return output === undefined || output === null ? '' : JSON.stringify(output);
  return output.map((part: Json) => (typeof part?.text === 'string' ? part.text : '')).join('');
}

/** The chat request: instructions first (never carried over), the stored history, this input. */
export function chatRequestOf(body: Json, request: ResponsesRequest, history: readonly Json[], input: readonly Json[]): Json {
  const settings = request.settings;
  const messages = [...(settings.instructions !== null ? [{ role: 'system', content: settings.instructions }] : []), ...history, ...input];
  const chat: Json = { model: body.model, messages };
  if (settings.tools.length > 0) {
    chat.tools = settings.tools.map((tool) => ({ type: 'function', function: { name: tool.name, ...(tool.description !== null ? { description: tool.description } : {}), parameters: tool.parameters ?? { type: 'object', properties: {} }, ...(tool.strict ? { strict: true } : {}) } }));
    const choice = settings.tool_choice;
    chat.tool_choice = typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
    if (body.parallel_tool_calls === false) chat.parallel_tool_calls = false;
  }
  if (settings.max_output_tokens !== null) chat.max_completion_tokens = settings.max_output_tokens;
  if (body.temperature !== undefined && body.temperature !== null) chat.temperature = body.temperature;
  if (body.top_p !== undefined && body.top_p !== null) chat.top_p = body.top_p;
  const format = settings.text.format;
  if (format.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (format.type === 'json_schema') chat.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, ...(format.strict !== null ? { strict: format.strict } : {}), ...(format.description ? { description: format.description } : {}) } };
  const effort = body.reasoning?.effort;
  if (typeof effort === 'string' && effort !== 'none') chat.reasoning_effort = effort;
  const user = settings.safety_identifier ?? settings.user;
  if (user) chat.user = user;
  if (request.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat;
}
