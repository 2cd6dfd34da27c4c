// The checks the fake Bedrock applies to a Converse request, as strict as the real API (providers.md
// §10.1 "Fake Bedrock"): a request the real service would refuse is refused here with AWS's wording,
// so a gateway bug shows up as a 400 in tests rather than in production.

export class ValidationError extends Error {}

type Json = Record<string, any>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
const BLOCK_KINDS = ['text', 'image', 'document', 'toolUse', 'toolResult', 'reasoningContent', 'cachePoint', 'guardContent', 'video', 'citationsContent'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function fail(message: string): never {
  throw new ValidationError(message);
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Claude and Nova cache prompts; other models refuse a cachePoint. */
export function cachesPrompts(modelId: string): boolean {
  return /anthropic\.|claude|nova/i.test(modelId);
}

/** At most four cache points per request, as Claude allows (Bedrock relays the model's error). */
const MAX_CACHE_POINTS = 4;

/**
 * How a Claude model on Bedrock takes thinking: a budget (`enabled`) only, either (Claude 4.6), or
 * adaptive only (Opus 4.7 and newer refuse a budget). Ids carry region prefixes and version suffixes
 * (`us.anthropic.claude-opus-4-6-v1`); `claude-opus-4-20250514` is 4.0, not 4.20250514.
 */
export function thinkingStyle(modelId: string): 'budget' | 'both' | 'adaptive' {
  const m = /claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)/.exec(modelId);
  if (!m) return 'budget';
  const major = Number(m[1]);
  const minor = Number(m[2] ?? 0);
  if (major > 4 || (major === 4 && minor >= 7)) return 'adaptive';
  return major === 4 && minor === 6 ? 'both' : 'budget';
}

/**
 * A cache point as Bedrock takes it. The wording for a point after a reasoning block and for more than
 * four points is what AWS answers in public reports (opencode #36517; Anthropic's own limit message);
 * for a point with nothing before it, two in a row, or a model that does not cache, AWS's exact words
 * are not on record and these say what it refuses.
 */
function checkCachePoint(value: unknown, where: string, previous: Json | undefined, modelId: string): void {
  if (!cachesPrompts(modelId)) fail(`${where}: this model does not support prompt caching: remove the cachePoint and try again.`);
  if (!isObject(value) || value.type !== 'default') fail(`${where}.cachePoint.type: Member must satisfy enum value set: [default]`);
  if (value.ttl !== undefined && value.ttl !== '5m' && value.ttl !== '1h') fail(`${where}.cachePoint.ttl: Member must satisfy enum value set: [5m, 1h]`);
  // A cache point marks the end of the block before it: there must be one, and not another point.
  if (previous === undefined) fail(`The model returned the following errors: ${where}: a cache point cannot be the first block; place it after the block whose prefix should be cached.`);
  if ('cachePoint' in previous) fail(`The model returned the following errors: ${where}: a cache point cannot follow another cache point.`);
  if ('reasoningContent' in previous) fail('Cache point cannot be inserted after reasoning block. Please remove the invalid cache point and try again.');
}

/** Claude and Nova accept `toolChoice: {tool}` (AWS ToolChoice docs); other models refuse it. */
export function acceptsNamedToolChoice(modelId: string): boolean {
  return /anthropic\.|claude|nova/i.test(modelId);
}

type Counts = { images: number; documents: number; texts: number; cachePoints: number };

function checkBlock(block: unknown, where: string, role: string, toolUseIds: Set<string>, counts: Counts, previous: Json | undefined, modelId: string): void {
  if (!isObject(block)) fail(`${where} must be a ContentBlock object`);
  const kinds = Object.keys(block).filter((key) => BLOCK_KINDS.includes(key));
  if (kinds.length !== 1 || Object.keys(block).length !== 1) fail(`ContentBlock object at ${where} can only set one of the following keys: ${BLOCK_KINDS.join(', ')}.`);
  const kind = kinds[0];
  const value = block[kind];
  switch (kind) {
    case 'text':
      if (typeof value !== 'string' || value.trim() === '') fail(`The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`);
      counts.texts++;
      return;
    case 'image':
      if (role !== 'user') fail(`${where}: images are only allowed in user messages`);
      if (!IMAGE_FORMATS.has(value?.format)) fail(`${where}.image.format must be one of png, jpeg, gif, webp`);
      if (typeof value?.source?.bytes === 'string') {
        if (!BASE64.test(value.source.bytes) || value.source.bytes === '') fail(`${where}.image.source.bytes is not valid base64`);
      } else if (!isObject(value?.source?.s3Location)) fail(`${where}.image.source needs bytes or s3Location`);
      counts.images++;
      return;
    case 'document':
      if (role !== 'user') fail(`${where}: documents are only allowed in user messages`);
      counts.documents++;
      return;
    case 'toolUse':
      if (role !== 'assistant') fail(`${where}: toolUse blocks are only allowed in assistant messages`);
      if (typeof value?.toolUseId !== 'string' || value.toolUseId === '') fail(`${where}.toolUse.toolUseId is required`);
      if (typeof value?.name !== 'string' || !TOOL_NAME.test(value.name)) fail(`${where}.toolUse.name failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`);
      if (!isObject(value.input)) fail(`${where}.toolUse.input must be an object`);
      toolUseIds.add(value.toolUseId);
      return;
    case 'cachePoint':
      checkCachePoint(value, where, previous, modelId);
      counts.cachePoints++;
      return;
    case 'toolResult':
      if (role !== 'user') fail(`${where}: toolResult blocks are only allowed in user messages`);
      if (!toolUseIds.has(value?.toolUseId)) fail(`${where}: the toolResult's toolUseId ${String(value?.toolUseId)} does not match any toolUse in the previous assistant turn`);
      if (!Array.isArray(value.content) || value.content.length === 0) fail(`${where}.toolResult.content must not be empty`);
      value.content.forEach((item: unknown, i: number) => {
        if (!isObject(item) || Object.keys(item).length !== 1) fail(`${where}.toolResult.content[${i}] must set exactly one member`);
        if ('text' in item && (typeof item.text !== 'string' || item.text.trim() === '')) fail(`${where}.toolResult.content[${i}].text is blank`);
      });
      return;
    default:
  }
}

function checkMessages(messages: unknown, modelId: string, counts: Counts): boolean {
  if (!Array.isArray(messages) || messages.length === 0) fail('The messages field is required and must not be empty.');
  let hasToolBlocks = false;
  let previousToolUses = new Set<string>();
  messages.forEach((message: unknown, i) => {
    if (!isObject(message)) fail(`messages.${i} must be an object`);
    if (message.role !== 'user' && message.role !== 'assistant') fail(`messages.${i}.role must be user or assistant`);
    if (i === 0 && message.role !== 'user') fail('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
    if (i > 0 && message.role === (messages[i - 1] as Json).role) fail('A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    if (!Array.isArray(message.content) || message.content.length === 0) fail(`messages.${i}.content must not be empty`);
    const toolUses = new Set<string>();
    const checkIds = message.role === 'user' ? previousToolUses : toolUses;
    message.content.forEach((block: unknown, j: number) => {
      checkBlock(block, `messages.${i}.content.${j}`, message.role, checkIds, counts, message.content[j - 1], modelId);
      if (isObject(block) && ('toolUse' in block || 'toolResult' in block)) hasToolBlocks = true;
    });
    previousToolUses = toolUses;
  });
  if (counts.images > 20) fail('Too many images: at most 20 images are allowed in a request.');
  if (counts.documents > 5) fail('Too many documents: at most 5 documents are allowed in a request.');
  if (counts.documents > 0 && counts.texts === 0) fail('A document requires an accompanying text block.');
  return hasToolBlocks;
}

function checkToolConfig(config: unknown, modelId: string, hasToolBlocks: boolean, counts: Counts): void {
  if (config === undefined) {
    if (hasToolBlocks) fail('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
    return;
  }
  if (!isObject(config) || !Array.isArray(config.tools) || config.tools.length === 0) fail('toolConfig.tools must be a non-empty list');
  const names = new Set<string>();
  config.tools.forEach((tool: unknown, k: number) => {
    if (!isObject(tool) || Object.keys(tool).length !== 1 || !('toolSpec' in tool || 'cachePoint' in tool)) fail(`Tool object at toolConfig.tools.${k} can only set one of the following keys: toolSpec, cachePoint.`);
    if ('cachePoint' in tool) {
      checkCachePoint(tool.cachePoint, `toolConfig.tools.${k}`, config.tools[k - 1], modelId);
      counts.cachePoints++;
      return;
    }
    const spec = tool.toolSpec;
    if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) fail(`toolConfig.tools.${k}.toolSpec.name failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`);
    if (!isObject(spec.inputSchema) || !isObject(spec.inputSchema.json)) fail(`toolConfig.tools.${k}.toolSpec.inputSchema.json must be an object`);
    names.add(spec.name);
  });
  const choice = config.toolChoice;
  if (choice === undefined) return;
  if (!isObject(choice) || Object.keys(choice).length !== 1 || !['auto', 'any', 'tool'].includes(Object.keys(choice)[0])) fail('toolConfig.toolChoice must set exactly one of auto, any, tool');
  if (choice.tool) {
    if (!acceptsNamedToolChoice(modelId)) fail('This model doesn\'t support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again.');
    if (!names.has(choice.tool.name)) fail(`toolConfig.toolChoice.tool.name ${String(choice.tool.name)} is not one of the tools`);
  }
}

function checkInferenceConfig(config: unknown): void {
  if (config === undefined) return;
  if (!isObject(config)) fail('inferenceConfig must be an object');
  if (config.maxTokens !== undefined && (!Number.isInteger(config.maxTokens) || config.maxTokens < 1)) fail('inferenceConfig.maxTokens must be at least 1');
  if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 1)) fail('inferenceConfig.temperature must be between 0 and 1');
  if (config.topP !== undefined && (typeof config.topP !== 'number' || config.topP < 0 || config.topP > 1)) fail('inferenceConfig.topP must be between 0 and 1');
  if (config.stopSequences !== undefined) {
    if (!Array.isArray(config.stopSequences) || config.stopSequences.some((s: unknown) => typeof s !== 'string' || s.length < 1)) fail('inferenceConfig.stopSequences items must have length at least 1');
  }
}

const TOP_LEVEL = new Set(['messages', 'system', 'inferenceConfig', 'toolConfig', 'additionalModelRequestFields', 'additionalModelResponseFieldPaths', 'guardrailConfig', 'performanceConfig', 'requestMetadata', 'outputConfig', 'serviceTier', 'promptVariables']);

/** Throws ValidationError with AWS's wording for a request the real Converse would refuse. */
export function validateConverse(body: unknown, modelId: string): void {
  if (!isObject(body)) fail('The request body must be a JSON object.');
  for (const key of Object.keys(body)) if (!TOP_LEVEL.has(key)) fail(`Malformed input request: extraneous key [${key}] is not permitted`);
  const counts: Counts = { images: 0, documents: 0, texts: 0, cachePoints: 0 };
  if (body.system !== undefined) {
    if (!Array.isArray(body.system)) fail('system must be a list of SystemContentBlock');
    body.system.forEach((block: unknown, i: number) => {
      if (!isObject(block) || Object.keys(block).length !== 1 || !['text', 'guardContent', 'cachePoint'].includes(Object.keys(block)[0])) fail(`SystemContentBlock object at system.${i} can only set one of the following keys: text, guardContent, cachePoint.`);
      if ('text' in block && (typeof block.text !== 'string' || block.text.trim() === '')) fail(`The text field in the SystemContentBlock object at system.${i} is blank.`);
      if ('cachePoint' in block) {
        checkCachePoint(block.cachePoint, `system.${i}`, (body.system as Json[])[i - 1], modelId);
        counts.cachePoints++;
      }
    });
  }
  const hasToolBlocks = checkMessages(body.messages, modelId, counts);
  checkToolConfig(body.toolConfig, modelId, hasToolBlocks, counts);
  if (counts.cachePoints > MAX_CACHE_POINTS) fail(`The model returned the following errors: A maximum of ${MAX_CACHE_POINTS} blocks with cache_control may be provided. Found ${counts.cachePoints}.`);
  checkInferenceConfig(body.inferenceConfig);
  const paths = body.additionalModelResponseFieldPaths;
  if (paths !== undefined && (!Array.isArray(paths) || paths.length > 10 || paths.some((p: unknown) => typeof p !== 'string' || !p.startsWith('/')))) {
    fail('additionalModelResponseFieldPaths must be a list of at most 10 JSON Pointers (each starting with /)');
  }
  const format = body.outputConfig?.textFormat;
  if (format !== undefined) {
    if (format.type !== 'json_schema' || typeof format.structure?.jsonSchema?.schema !== 'string') fail('outputConfig.textFormat needs type json_schema and structure.jsonSchema.schema (a JSON string)');
    try {
      JSON.parse(format.structure.jsonSchema.schema);
    } catch {
      fail('outputConfig.textFormat.structure.jsonSchema.schema is not valid JSON');
    }
  }
  checkThinking(body.additionalModelRequestFields, body.inferenceConfig?.maxTokens, modelId);
}

/** Claude's thinking in additionalModelRequestFields: a budget, or adaptive thinking with output_config.effort, per model. */
function checkThinking(fields: Json | undefined, maxTokens: number | undefined, modelId: string): void {
  const thinking = fields?.thinking;
  const effort = fields?.output_config?.effort;
  if (thinking === undefined && effort === undefined) return;
  if (!/anthropic\.|claude/i.test(modelId)) fail(`The model returned the following errors: ${thinking === undefined ? 'output_config' : 'thinking'}: Extra inputs are not permitted`);
  if (effort !== undefined && !['low', 'medium', 'high', 'xhigh', 'max'].includes(effort)) fail("The model returned the following errors: output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
  if (thinking === undefined) return;
  const style = thinkingStyle(modelId);
  if (thinking.type === 'enabled') {
    if (style === 'adaptive') fail('The model returned the following errors: "thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.');
    if (!(thinking.budget_tokens >= 1024) || (maxTokens !== undefined && thinking.budget_tokens >= maxTokens)) fail('The model returned the following errors: thinking.budget_tokens must be ≥ 1024 and less than max_tokens');
  } else if (thinking.type === 'adaptive') {
    if (style === 'budget') fail('The model returned the following errors: adaptive thinking is not supported on this model');
    if (thinking.budget_tokens !== undefined) fail('The model returned the following errors: thinking.adaptive.budget_tokens: Extra inputs are not permitted');
  } else if (thinking.type !== 'disabled') fail('The model returned the following errors: thinking.type must be enabled or adaptive');
}
