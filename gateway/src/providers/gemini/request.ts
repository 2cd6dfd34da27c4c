// An OpenAI chat request as Gemini's GenerateContent request: the messages (contents.ts), the
// generation settings, tools and their choice, structured output and thinking. Parameters Gemini has
// no equivalent for get a 400 naming them, or are dropped when the Upstream says so.
import { ApiError } from '../../http/errors.ts';
import type { OpenAIBody, ProviderRequest, ProviderRequestContext } from '../provider.ts';
import { reasoningEffort, type ReasoningEffort, type ThinkingEffort } from '../reasoning-effort.ts';
import { buildContents } from './contents.ts';
import { toGeminiSchema } from './schema.ts';
import { modelPath, modelTraits, type GoogleSurface, type ModelTraits } from './variant.ts';

type Json = Record<string, unknown>;

/** Thinking budgets (Gemini 2.5) for OpenAI's effort levels, before the model's own maximum and maxOutputTokens limit them. */
const BUDGETS: Record<ThinkingEffort, number> = { minimal: 512, low: 1024, medium: 8192, high: 24576, xhigh: 32768, max: 32768 };
/** Pro models cannot think less than this (nor turn thinking off). */
const PRO_MIN_BUDGET = 128;
/** Function names Gemini accepts: a letter or underscore, then letters, digits, `_.:-`, at most 64. */
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;

/** A parameter Gemini cannot honour: 400 naming it, or left out when the Upstream drops unsupported parameters. */
function unsupported(ctx: ProviderRequestContext, param: string, message: string): void {
  if (ctx.upstream.spec.dropUnsupportedParams) return;
  throw new ApiError(400, 'unsupported_parameter', message, { param });
}

export function chatRequest(surface: GoogleSurface, body: OpenAIBody, ctx: ProviderRequestContext, stream: boolean): ProviderRequest {
  const traits = modelTraits(ctx.model);
  const request: Json = { ...buildContents(body, surface, traits) };
  const generationConfig = generation(body, ctx, traits, stream);
  const tools = functionTools(body, traits);
  if (tools) request.tools = tools;
  const toolConfig = toolChoice(body, ctx, tools !== undefined);
  if (toolConfig) request.toolConfig = toolConfig;
  if (Object.keys(generationConfig).length > 0) request.generationConfig = generationConfig;
  const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
  return {
    path: `${modelPath(surface, ctx.upstream, ctx.model)}:${method}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(stream ? { accept: 'text/event-stream' } : {}) },
    body: JSON.stringify(request),
  };
}

function generation(body: OpenAIBody, ctx: ProviderRequestContext, traits: ModelTraits, stream: boolean): Json {
  const config: Json = {};
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (typeof maxTokens === 'number') config.maxOutputTokens = maxTokens;
  if (typeof body.temperature === 'number') config.temperature = body.temperature;
  if (typeof body.top_p === 'number') config.topP = body.top_p;
  if (typeof body.stop === 'string') config.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) config.stopSequences = body.stop;
  if (typeof body.seed === 'number') config.seed = body.seed;
  if (typeof body.presence_penalty === 'number') config.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') config.frequencyPenalty = body.frequency_penalty;
  if (typeof body.n === 'number' && body.n > 1) {
    if (stream) unsupported(ctx, 'n', 'Several choices (n > 1) cannot be streamed from Gemini; ask for n = 1 or without stream.');
    else config.candidateCount = body.n;
  }
  if (body.logit_bias != null) unsupported(ctx, 'logit_bias', 'Gemini has no logit_bias.');
  if (body.logprobs === true || body.top_logprobs != null) unsupported(ctx, body.logprobs === true ? 'logprobs' : 'top_logprobs', 'Log probabilities are not translated from Gemini.');
  if (body.parallel_tool_calls === false) unsupported(ctx, 'parallel_tool_calls', 'Gemini cannot be told to make at most one tool call; leave parallel_tool_calls unset.');
  for (const param of ['audio', 'prediction', 'web_search_options', 'functions', 'function_call'] as const) {
    if (body[param] != null) unsupported(ctx, param, `'${param}' is not supported on Gemini models.`);
  }
  if (Array.isArray(body.modalities) && body.modalities.some((modality) => modality !== 'text')) unsupported(ctx, 'modalities', 'Gemini models answer text only through this API.');

  const format = body.response_format as { type?: unknown; json_schema?: { schema?: unknown } } | undefined;
  if (format?.type === 'json_object') config.responseMimeType = 'application/json';
  else if (format?.type === 'json_schema') {
    config.responseMimeType = 'application/json';
    const schema = format.json_schema?.schema;
    if (schema !== undefined) {
      if (traits.jsonSchema) config.responseJsonSchema = schema;
      else config.responseSchema = toGeminiSchema(schema, 'response_format.json_schema.schema');
    }
  }

  const effort = reasoningEffort(body.reasoning_effort);
  if (effort !== null) {
    const thinking = thinkingConfig(effort, traits, typeof maxTokens === 'number' ? maxTokens : undefined);
    if (thinking) config.thinkingConfig = thinking;
    else if (effort !== 'none') unsupported(ctx, 'reasoning_effort', `This Gemini model does not reason; reasoning_effort '${effort}' cannot be honoured.`);
  }
  return config;
}

/**
 * `reasoning_effort` as a thinking budget (2.5) or level (3), with thought summaries returned as
 * reasoning text. Gemini counts thinking against maxOutputTokens, so a budget is kept to three
 * quarters of it (as for Claude): a budget as large as the maximum can leave an empty answer cut off
 * at the limit. A level has no number to limit; Gemini 3 sizes its thinking itself.
 */
function thinkingConfig(effort: ReasoningEffort, traits: ModelTraits, maxOutputTokens: number | undefined): Json | null {
  if (traits.thinking === 'budget') {
    if (effort === 'none') return { thinkingBudget: traits.pro ? PRO_MIN_BUDGET : 0 };
    const share = maxOutputTokens === undefined ? Infinity : Math.floor((maxOutputTokens * 3) / 4);
    const budget = Math.max(traits.pro ? PRO_MIN_BUDGET : 0, Math.min(BUDGETS[effort], traits.maxThinkingBudget, share));
    // No room to think on a model that can stop: it does not.
    if (budget === 0) return { thinkingBudget: 0 };
    return { thinkingBudget: budget, includeThoughts: true };
  }
  if (traits.thinking === 'level') {
    const level =
      effort === 'none' || effort === 'minimal' ? (traits.pro ? 'LOW' : 'MINIMAL')
      : effort === 'low' ? 'LOW'
      : effort === 'medium' ? (traits.pro ? 'HIGH' : 'MEDIUM')
      : 'HIGH';
    return { thinkingLevel: level, includeThoughts: effort !== 'none' };
  }
  return null;
}

function functionTools(body: OpenAIBody, traits: ModelTraits): Json[] | undefined {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return undefined;
  const declarations = body.tools.map((tool, i) => {
    const t = tool as { type?: unknown; function?: { name?: unknown; description?: unknown; parameters?: unknown } };
    if (t.type !== 'function') throw new ApiError(400, 'unsupported_parameter', `Tools of type '${String(t.type)}' cannot be sent to Gemini; only function tools can.`, { param: `tools[${i}].type` });
    const name = typeof t.function?.name === 'string' ? t.function.name : '';
    if (!FUNCTION_NAME.test(name)) throw new ApiError(400, 'invalid_request', `Gemini function names start with a letter or underscore and hold only letters, digits, '_', '.', ':' and '-' (at most 64): '${name}' does not.`, { param: `tools[${i}].function.name` });
    const declaration: Json = { name };
    if (typeof t.function?.description === 'string') declaration.description = t.function.description;
    const parameters = t.function?.parameters;
    if (parameters !== undefined && !isEmptyObjectSchema(parameters)) {
      if (traits.jsonSchema) declaration.parametersJsonSchema = parameters;
      else declaration.parameters = toGeminiSchema(parameters, `tools[${i}].function.parameters`);
    }
    return declaration;
  });
  return [{ functionDeclarations: declarations }];
}

/** `{type:"object", properties:{}}`: a function without parameters, which Gemini wants said by leaving them out. */
function isEmptyObjectSchema(schema: unknown): boolean {
  const s = schema as { type?: unknown; properties?: unknown };
  return typeof s === 'object' && s !== null && (s.properties === undefined || (typeof s.properties === 'object' && s.properties !== null && Object.keys(s.properties).length === 0)) && Object.keys(s).every((key) => key === 'type' || key === 'properties' || key === 'additionalProperties' || key === 'required');
}

function toolChoice(body: OpenAIBody, ctx: ProviderRequestContext, hasTools: boolean): Json | undefined {
  const choice = body.tool_choice;
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto') return hasTools ? { functionCallingConfig: { mode: 'AUTO' } } : undefined;
  if (choice === 'none') return hasTools ? { functionCallingConfig: { mode: 'NONE' } } : undefined;
  if (!hasTools) {
    unsupported(ctx, 'tool_choice', 'tool_choice asks for a tool call but no tools were given.');
    return undefined;
  }
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  const named = choice as { type?: unknown; function?: { name?: unknown } };
  if (named.type === 'function' && typeof named.function?.name === 'string') {
    const declared = (body.tools as { function?: { name?: unknown } }[]).some((tool) => tool.function?.name === named.function?.name);
    if (!declared) throw new ApiError(400, 'invalid_request', `tool_choice names '${named.function.name}', which is not among the tools.`, { param: 'tool_choice' });
    return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [named.function.name] } };
  }
  unsupported(ctx, 'tool_choice', 'This tool_choice cannot be said to Gemini (auto, none, required or a named function can).');
  return undefined;
}
