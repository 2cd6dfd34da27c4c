// OpenAI chat request → Converse / ConverseStream request (path, headers, JSON body). Parameters with
// no Converse equivalent are refused with a 400 naming them, or dropped when the Upstream sets
// `dropUnsupportedParams`.
import { ApiError } from '../../http/errors.ts';
import { claudeModel, type ClaudeModel } from '../anthropic/models.ts';
import { hasCacheMarker } from '../cache-markers.ts';
import { ADAPTIVE_EFFORT, maxTokensForThinking, NO_ROOM_TO_THINK, thinkingBudget } from '../claude-thinking.ts';
import type { OpenAIBody, ProviderRequest, ProviderRequestContext } from '../provider.ts';
import { reasoningEffort } from '../reasoning-effort.ts';
import { cachePoint, convertHistory, type Block, type ConverseMessage } from './messages.ts';
import { bedrockToolName } from './tool-names.ts';

/** Sent when the history holds tool blocks but the client sent no tools: Converse requires a toolConfig then. */
export const PLACEHOLDER_TOOL = 'tollgate_placeholder_do_not_call';

/** The wire path for a model id: base ids carry `:`, ARNs `/`; both are percent-encoded once here (SigV4 encodes again for its canonical URI). */
export function modelPath(model: string, operation: 'converse' | 'converse-stream' | 'invoke'): string {
  return `/model/${encodeURIComponent(model)}/${operation}`;
}

export function isClaude(model: string): boolean {
  return /anthropic\.|claude/i.test(model);
}

/**
 * The Claude model a Bedrock model id names, for what it shares with Anthropic's own API (output
 * maximum, whether it thinks): `us.anthropic.claude-sonnet-4-5-20250929-v1:0`, alone or at the end of
 * an ARN, is `claude-sonnet-4-5-20250929`. An id that names no known model gets the table's default.
 */
export function claudeModelOf(model: string): ClaudeModel {
  const name = model.slice(model.lastIndexOf('/') + 1);
  return claudeModel(name.replace(/^(?:[a-z]+\.)?anthropic\./, '').replace(/-v\d+(?::\d+)?$/, ''));
}

/**
 * Models that take cache points (Bedrock prompt caching: Anthropic Claude and Amazon Nova). Other
 * models are sent none: a marker is a hint, and they would refuse the block.
 */
export function cachesPrompts(model: string): boolean {
  return isClaude(model) || /amazon\.nova|\bnova-/i.test(model);
}

/** Models that accept `toolChoice: {tool}` (AWS ToolChoice docs: Anthropic Claude 3+ and Amazon Nova). */
function acceptsNamedToolChoice(model: string): boolean {
  return isClaude(model) || /amazon\.nova|\bnova-/i.test(model);
}

class ParamPolicy {
  readonly drop: boolean;
  constructor(ctx: ProviderRequestContext) {
    this.drop = ctx.upstream.spec.dropUnsupportedParams === true;
  }
  /** Refuses a parameter Converse cannot honour, unless the Upstream drops such parameters. */
  refuse(param: string, message: string): void {
    if (!this.drop) throw new ApiError(400, 'unsupported_parameter', message, { param });
  }
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function checkUnsupported(body: OpenAIBody, policy: ParamPolicy): void {
  if (isSet(body.n) && body.n !== 1) policy.refuse('n', 'Amazon Bedrock does not support n (several choices); send one request per choice.');
  if (isSet(body.seed)) policy.refuse('seed', 'Amazon Bedrock Converse does not support seed.');
  for (const param of ['presence_penalty', 'frequency_penalty'] as const) {
    if (isSet(body[param]) && body[param] !== 0) policy.refuse(param, `Amazon Bedrock Converse does not support ${param}.`);
  }
  if (body.logprobs === true || isSet(body.top_logprobs)) policy.refuse(body.logprobs === true ? 'logprobs' : 'top_logprobs', 'Amazon Bedrock Converse does not return log probabilities.');
  if (isSet(body.logit_bias) && Object.keys(body.logit_bias as object).length > 0) policy.refuse('logit_bias', 'Amazon Bedrock Converse does not support logit_bias.');
  if (body.parallel_tool_calls === false) policy.refuse('parallel_tool_calls', 'Amazon Bedrock Converse cannot turn off parallel tool calls.');
  for (const param of ['audio', 'prediction', 'web_search_options'] as const) {
    if (isSet(body[param])) policy.refuse(param, `Amazon Bedrock Converse does not support ${param}.`);
  }
  if (Array.isArray(body.modalities) && body.modalities.some((m) => m !== 'text')) policy.refuse('modalities', 'Amazon Bedrock Converse answers text only.');
}

function inferenceConfig(body: OpenAIBody): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (isSet(maxTokens)) config.maxTokens = maxTokens;
  if (isSet(body.temperature)) {
    if ((body.temperature as number) > 1) throw new ApiError(400, 'unsupported_value', 'Amazon Bedrock takes temperature from 0 to 1.', { param: 'temperature' });
    config.temperature = body.temperature;
  }
  if (isSet(body.top_p)) config.topP = body.top_p;
  const stop = typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : [];
  const stopSequences = stop.filter((s): s is string => typeof s === 'string' && s !== '');
  if (stopSequences.length > 0) config.stopSequences = stopSequences;
  return config;
}

/** The tools as Converse Tool elements; a marked tool is followed by a `cachePoint` element of its own (an element is one or the other). */
function toolSpecs(body: OpenAIBody, cache: boolean): Block[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.flatMap((tool: Record<string, unknown>, k) => {
    const fn = tool?.function as { name?: unknown; description?: unknown; parameters?: unknown } | undefined;
    if (tool?.type !== 'function' || typeof fn?.name !== 'string') {
      throw new ApiError(400, 'unsupported_parameter', `Amazon Bedrock takes only function tools (tools[${k}]).`, { param: `tools[${k}]` });
    }
    const spec: Record<string, unknown> = { name: bedrockToolName(fn.name), inputSchema: { json: fn.parameters ?? { type: 'object', properties: {} } } };
    if (typeof fn.description === 'string' && fn.description !== '') spec.description = fn.description;
    return cache && hasCacheMarker(tool) ? [{ toolSpec: spec }, cachePoint(tool)] : [{ toolSpec: spec }];
  });
}

function toolChoice(body: OpenAIBody, model: string, policy: ParamPolicy): Block | undefined {
  const choice = body.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto') return choice === 'auto' ? { auto: {} } : undefined;
  if (choice === 'required') return { any: {} };
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof name === 'string') {
    if (acceptsNamedToolChoice(model)) return { tool: { name: bedrockToolName(name) } };
    policy.refuse('tool_choice', `Amazon Bedrock accepts a named tool_choice only for Anthropic Claude and Amazon Nova models, not ${model}.`);
    return undefined;
  }
  throw new ApiError(400, 'invalid_value', 'tool_choice must be none, auto, required or a named function.', { param: 'tool_choice' });
}

function toolConfig(body: OpenAIBody, model: string, hasToolBlocks: boolean, policy: ParamPolicy): Record<string, unknown> | undefined {
  let tools = toolSpecs(body, cachesPrompts(model));
  let choice: Block | undefined;
  if (body.tool_choice === 'none') {
    // Converse has no "none": without tool history, leaving the tools out means the same; with it,
    // Converse requires the tools and the model may call one.
    if (hasToolBlocks) policy.refuse('tool_choice', "Amazon Bedrock has no tool_choice 'none' and needs the tools when the history holds tool calls.");
    else tools = [];
  } else {
    choice = toolChoice(body, model, policy);
  }
  if (tools.length === 0) {
    if (!hasToolBlocks) return undefined;
    // Only the placeholder: no choice, so that nothing can force the model to call it.
    return { tools: [{ toolSpec: { name: PLACEHOLDER_TOOL, description: 'Placeholder: never call this tool.', inputSchema: { json: { type: 'object', properties: {} } } } }] };
  }
  return choice ? { tools, toolChoice: choice } : { tools };
}

/** `response_format` → `outputConfig.textFormat` (Converse's native structured output; see docs/providers/bedrock.md). */
function outputConfig(body: OpenAIBody): Record<string, unknown> | undefined {
  const format = body.response_format as { type?: string; json_schema?: { name?: string; description?: string; schema?: unknown } } | undefined;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') {
    return { textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify({ type: 'object' }), name: 'json_object' } } } };
  }
  if (format.type === 'json_schema' && format.json_schema) {
    const definition: Record<string, unknown> = { schema: JSON.stringify(format.json_schema.schema ?? { type: 'object' }) };
    if (format.json_schema.name) definition.name = format.json_schema.name;
    if (format.json_schema.description) definition.description = format.json_schema.description;
    return { textFormat: { type: 'json_schema', structure: { jsonSchema: definition } } };
  }
  throw new ApiError(400, 'invalid_value', `response_format type '${String(format.type)}' is not supported.`, { param: 'response_format' });
}

/**
 * `reasoning_effort` → Claude's extended thinking (`additionalModelRequestFields`), as Anthropic's own
 * API is sent it for the same model (../anthropic/models.ts, ../claude-thinking.ts): adaptive thinking
 * with `output_config.effort` for the models that think adaptively (Claude 4.6 and newer; the newest
 * refuse a budget), else a thinking budget. Without a client max_tokens, one with room for the
 * effort's budget and an answer is sent.
 */
function applyReasoning(body: OpenAIBody, model: string, messages: ConverseMessage[], config: Record<string, unknown>, request: Record<string, unknown>, policy: ParamPolicy): void {
  const effort = reasoningEffort(body.reasoning_effort);
  if (effort === null || effort === 'none') return;
  if (!isClaude(model)) {
    policy.refuse('reasoning_effort', `Amazon Bedrock maps reasoning_effort only for Anthropic Claude models, not ${model}.`);
    return;
  }
  const claude = claudeModelOf(model);
  if (claude.thinking === 'none') {
    policy.refuse('reasoning_effort', `${model} does not reason: leave out reasoning_effort.`);
    return;
  }
  // Claude wants the turn that called a tool to start with its signed thinking block when thinking is
  // on; OpenAI clients do not keep those blocks, so a tool loop's continuation goes without thinking.
  const last = messages.at(-1);
  if (last?.content.some((block) => 'toolResult' in block)) return;
  const maxTokens = (config.maxTokens as number | undefined) ?? maxTokensForThinking(effort, claude.defaultMaxTokens);
  if (claude.thinking === 'adaptive') {
    config.maxTokens = maxTokens;
    request.additionalModelRequestFields = { thinking: { type: 'adaptive' }, output_config: { effort: ADAPTIVE_EFFORT[effort] } };
    return;
  }
  const budget = thinkingBudget(effort, maxTokens);
  if (budget === null) {
    policy.refuse('reasoning_effort', NO_ROOM_TO_THINK);
    return;
  }
  config.maxTokens = maxTokens;
  request.additionalModelRequestFields = { thinking: { type: 'enabled', budget_tokens: budget } };
}

export function chatRequest(body: OpenAIBody, ctx: ProviderRequestContext, stream: boolean): ProviderRequest {
  const policy = new ParamPolicy(ctx);
  checkUnsupported(body, policy);
  const history = convertHistory(body.messages, cachesPrompts(ctx.model));
  const request: Record<string, unknown> = { messages: history.messages };
  if (history.system.length > 0) request.system = history.system;
  const config = inferenceConfig(body);
  applyReasoning(body, ctx.model, history.messages, config, request, policy);
  if (Object.keys(config).length > 0) request.inferenceConfig = config;
  // Claude names the stop sequence it stopped on only when asked; the Messages API reports it (exchange.stopSequence).
  if (config.stopSequences && isClaude(ctx.model)) request.additionalModelResponseFieldPaths = ['/stop_sequence'];
  const tools = toolConfig(body, ctx.model, history.hasToolBlocks, policy);
  if (tools) request.toolConfig = tools;
  const output = outputConfig(body);
  if (output) request.outputConfig = output;
  return {
    path: modelPath(ctx.model, stream ? 'converse-stream' : 'converse'),
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' },
    body: JSON.stringify(request),
  };
}
