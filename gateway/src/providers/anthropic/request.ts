// An OpenAI chat request as an Anthropic Messages request (POST /v1/messages). Parameters with no
// equivalent are a 400 naming them before anything is sent, or dropped when the Upstream says
// `dropUnsupportedParams`. The per-model facts (default max_tokens, thinking style) are in models.ts.
import { ApiError } from '../../http/errors.ts';
import type { OpenAIBody, ProviderRequest, ProviderRequestContext } from '../provider.ts';
import { convertHistory } from './messages.ts';
import { ADAPTIVE_EFFORT, NO_ROOM_TO_THINK, thinkingBudget } from '../claude-thinking.ts';
import { reasoningEffort, type ReasoningEffort } from '../reasoning-effort.ts';
import { claudeModel } from './models.ts';

export const ANTHROPIC_VERSION = '2023-06-01';

/** The tool sent when the history has tool calls but the request declares no tools (Anthropic then requires some). */
export const PLACEHOLDER_TOOL = {
  name: 'tollgate_no_tools',
  description: 'Placeholder: earlier turns used tools that this request does not offer. Do not call it.',
  input_schema: { type: 'object', properties: {} },
};

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** OpenAI parameters Anthropic has no equivalent for, and when a value of them matters. */
const UNSUPPORTED: Array<[param: string, matters: (value: unknown) => boolean, why: string]> = [
  ['n', (v) => typeof v === 'number' && v > 1, 'Anthropic models return one choice: n must be 1.'],
  ['logit_bias', (v) => isObject(v) && Object.keys(v).length > 0, 'Anthropic models do not support logit_bias.'],
  ['logprobs', (v) => v === true, 'Anthropic models do not return log probabilities.'],
  ['top_logprobs', (v) => typeof v === 'number', 'Anthropic models do not return log probabilities.'],
  ['seed', (v) => v != null, 'Anthropic models do not support seed.'],
  ['presence_penalty', (v) => typeof v === 'number' && v !== 0, 'Anthropic models do not support presence_penalty.'],
  ['frequency_penalty', (v) => typeof v === 'number' && v !== 0, 'Anthropic models do not support frequency_penalty.'],
  ['audio', (v) => v != null, 'Anthropic models do not produce audio.'],
  ['modalities', (v) => Array.isArray(v) && v.some((m) => m !== 'text'), 'Anthropic models only produce text.'],
  ['prediction', (v) => v != null, 'Anthropic models do not support predicted outputs.'],
  ['web_search_options', (v) => v != null, 'web_search_options is not supported for Anthropic models.'],
  ['functions', (v) => v != null, "The deprecated 'functions' parameter is not supported for Anthropic models: use tools."],
  ['function_call', (v) => v != null, "The deprecated 'function_call' parameter is not supported for Anthropic models: use tool_choice."],
];

function unsupported(param: string, message: string): ApiError {
  return new ApiError(400, 'unsupported_parameter', message, { param });
}

export function chatRequest(body: OpenAIBody, ctx: ProviderRequestContext, stream: boolean): ProviderRequest {
  const drop = ctx.upstream.spec.dropUnsupportedParams === true;
  for (const [param, matters, why] of UNSUPPORTED) {
    if (matters(body[param]) && !drop) throw unsupported(param, why);
  }
  const model = claudeModel(ctx.model);
  const history = convertHistory(body.messages);
  const out: Json = { model: ctx.model };
  const maxTokens = maxTokensOf(body, model.defaultMaxTokens);
  out.max_tokens = maxTokens;
  if (history.system.length > 0) out.system = history.system;
  out.messages = history.messages;

  sampling(body, out, model.samplingExclusive, drop);
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  // Anthropic refuses whitespace-only stop sequences; they could never end an answer usefully.
  const stops = stop.filter((s): s is string => typeof s === 'string' && s.trim() !== '');
  if (stops.length > 0) out.stop_sequences = stops;

  tools(body, out, history.hasToolBlocks);
  const outputConfig: Json = {};
  const format = responseFormat(body.response_format);
  if (format) outputConfig.format = format;
  // An assistant tool turn replayed without its thinking blocks cannot be continued with thinking on
  // (Anthropic refuses it): such a turn is continued without thinking.
  const effort = reasoningEffort(body.reasoning_effort);
  if (!history.lastToolTurnUnsigned) thinking(effort, model.thinking, maxTokens, out, outputConfig, drop);
  if (out.thinking) thinkingConflicts(out, outputConfig, drop);
  if (Object.keys(outputConfig).length > 0) out.output_config = outputConfig;

  const userId = body.user;
  // Anthropic refuses ids that look like personal data (e-mail addresses, phone numbers): they are left out.
  if (typeof userId === 'string' && userId !== '' && !/@|^\+?[\d\s().-]{7,}$/.test(userId)) out.metadata = { user_id: userId };
  if (stream) out.stream = true;

  return {
    path: '/v1/messages',
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION, accept: stream ? 'text/event-stream' : 'application/json' },
    body: JSON.stringify(out),
  };
}

function maxTokensOf(body: OpenAIBody, fallback: number): number {
  for (const param of ['max_completion_tokens', 'max_tokens'] as const) {
    const value = body[param];
    if (value == null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw new ApiError(400, 'invalid_value', `'${param}' must be a positive integer.`, { param });
    }
    return value;
  }
  return fallback;
}

function sampling(body: OpenAIBody, out: Json, exclusive: boolean, drop: boolean): void {
  const { temperature, top_p: topP } = body;
  let sendTemperature = typeof temperature === 'number';
  if (sendTemperature && (temperature as number) > 1) {
    if (!drop) throw unsupported('temperature', `Anthropic models take a temperature between 0 and 1, not ${String(temperature)}.`);
    sendTemperature = false;
  }
  let sendTopP = typeof topP === 'number';
  if (sendTemperature && sendTopP && exclusive) {
    if (!drop) throw unsupported('top_p', 'This Anthropic model does not accept temperature and top_p together: send one of them.');
    sendTopP = false;
  }
  if (sendTemperature) out.temperature = temperature;
  if (sendTopP) out.top_p = topP;
  // top_k is no OpenAI parameter, but clients written for Claude send it.
  if (typeof body.top_k === 'number') out.top_k = body.top_k;
}

function tools(body: OpenAIBody, out: Json, hasToolBlocks: boolean): void {
  const declared = Array.isArray(body.tools) ? body.tools : [];
  const converted = declared.map((tool, i) => {
    if (!isObject(tool) || tool.type !== 'function' || !isObject(tool.function)) {
      throw unsupported(`tools[${i}].type`, `Only function tools can be offered to Anthropic models (tools[${i}]).`);
    }
    const fn = tool.function;
    const schema = isObject(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    const result: Json = { name: fn.name, input_schema: schema };
    if (typeof fn.description === 'string' && fn.description !== '') result.description = fn.description;
    if (fn.strict === true) result.strict = true;
    // A prompt-cache marker on the tool (../cache-markers.ts) ends the cached prefix after it.
    if (isObject(tool.cache_control)) result.cache_control = tool.cache_control;
    return result;
  });
  if (converted.length > 0) {
    out.tools = converted;
    const choice = toolChoice(body.tool_choice, body.parallel_tool_calls === false);
    if (choice) out.tool_choice = choice;
  } else if (hasToolBlocks) {
    // The client offers no tools now, so it expects none to be called.
    out.tools = [PLACEHOLDER_TOOL];
    out.tool_choice = { type: 'none' };
  }
}

function toolChoice(choice: unknown, serial: boolean): Json | null {
  let result: Json | null;
  if (choice == null) result = serial ? { type: 'auto' } : null;
  else if (choice === 'auto') result = { type: 'auto' };
  else if (choice === 'required') result = { type: 'any' };
  else if (choice === 'none') return { type: 'none' };
  else if (isObject(choice) && choice.type === 'function' && isObject(choice.function) && typeof choice.function.name === 'string') {
    result = { type: 'tool', name: choice.function.name };
  } else throw unsupported('tool_choice', "tool_choice must be 'auto', 'required', 'none' or a named function for Anthropic models.");
  if (result && serial) result.disable_parallel_tool_use = true;
  return result;
}

/** response_format through Anthropic's structured outputs (`output_config.format`). */
function responseFormat(format: unknown): Json | null {
  if (format == null || !isObject(format) || format.type === 'text') return null;
  if (format.type === 'json_object') return { type: 'json_schema', schema: { type: 'object', additionalProperties: true } };
  if (format.type === 'json_schema' && isObject(format.json_schema) && isObject(format.json_schema.schema)) {
    return { type: 'json_schema', schema: format.json_schema.schema };
  }
  throw unsupported('response_format', "response_format must be 'text', 'json_object' or 'json_schema' with a schema for Anthropic models.");
}

/**
 * Anthropic refuses thinking with a temperature other than 1, with top_k, and with a forced tool
 * choice: a 400 naming the parameter, or (dropUnsupportedParams) the sampling parameters left out
 * and a forced tool choice kept at the cost of thinking.
 */
function thinkingConflicts(out: Json, outputConfig: Json, drop: boolean): void {
  const forced = isObject(out.tool_choice) && (out.tool_choice.type === 'any' || out.tool_choice.type === 'tool');
  if (forced) {
    if (!drop) throw unsupported('tool_choice', 'Anthropic models cannot be forced to call a tool while reasoning: use tool_choice auto or leave out reasoning_effort.');
    delete out.thinking;
    delete outputConfig.effort;
    return;
  }
  for (const param of ['temperature', 'top_k'] as const) {
    if (out[param] === undefined || (param === 'temperature' && out[param] === 1)) continue;
    if (!drop) throw unsupported(param, `Anthropic models take no ${param} while reasoning: leave it out or leave out reasoning_effort.`);
    delete out[param];
  }
}

function thinking(effort: ReasoningEffort | null, style: 'budget' | 'adaptive' | 'none', maxTokens: number, out: Json, outputConfig: Json, drop: boolean): void {
  if (effort === null || effort === 'none') return;
  if (style === 'none') {
    if (drop) return;
    throw unsupported('reasoning_effort', 'This Anthropic model does not reason: leave out reasoning_effort.');
  }
  if (style === 'adaptive') {
    out.thinking = { type: 'adaptive' };
    outputConfig.effort = ADAPTIVE_EFFORT[effort];
    return;
  }
  const budget = thinkingBudget(effort, maxTokens);
  if (budget === null) {
    if (drop) return;
    throw unsupported('reasoning_effort', NO_ROOM_TO_THINK);
  }
  out.thinking = { type: 'enabled', budget_tokens: budget };
}
