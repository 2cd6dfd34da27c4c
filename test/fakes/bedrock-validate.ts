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

/** Claude and Nova accept `toolChoice: {tool}` (AWS ToolChoice docs); other models refuse it. */
export function acceptsNamedToolChoice(modelId: string): boolean {
  return /anthropic\.|claude|nova/i.test(modelId);
}

function checkBlock(block: unknown, where: string, role: string, toolUseIds: Set<string>, counts: { images: number; documents: number; texts: number }): void {
  if (!isObject(block)) fail(`${where} must be a ContentBlock object`);
  const kinds = Object.keys(block).filter((key) => BLOCK_KINDS.includes(key));
  if (kinds.length !== 1 || Object.keys(block).length !== 1) fail(`${where}: a ContentBlock must set exactly one member, found ${Object.keys(block).join(', ') || 'none'}`);
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

function checkMessages(messages: unknown): boolean {
  if (!Array.isArray(messages) || messages.length === 0) fail('The messages field is required and must not be empty.');
  let hasToolBlocks = false;
  let previousToolUses = new Set<string>();
  const counts = { images: 0, documents: 0, texts: 0 };
  messages.forEach((message: unknown, i) => {
    if (!isObject(message)) fail(`messages.${i} must be an object`);
    if (message.role !== 'user' && message.role !== 'assistant') fail(`messages.${i}.role must be user or assistant`);
    if (i === 0 && message.role !== 'user') fail('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
    if (i > 0 && message.role === (messages[i - 1] as Json).role) fail('A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    if (!Array.isArray(message.content) || message.content.length === 0) fail(`messages.${i}.content must not be empty`);
    const toolUses = new Set<string>();
    const checkIds = message.role === 'user' ? previousToolUses : toolUses;
    message.content.forEach((block: unknown, j: number) => {
      checkBlock(block, `messages.${i}.content.${j}`, message.role, checkIds, counts);
      if (isObject(block) && ('toolUse' in block || 'toolResult' in block)) hasToolBlocks = true;
    });
    previousToolUses = toolUses;
  });
  if (counts.images > 20) fail('Too many images: at most 20 images are allowed in a request.');
  if (counts.documents > 5) fail('Too many documents: at most 5 documents are allowed in a request.');
  if (counts.documents > 0 && counts.texts === 0) fail('A document requires an accompanying text block.');
  return hasToolBlocks;
}

function checkToolConfig(config: unknown, modelId: string, hasToolBlocks: boolean): void {
  if (config === undefined) {
    if (hasToolBlocks) fail('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
    return;
  }
  if (!isObject(config) || !Array.isArray(config.tools) || config.tools.length === 0) fail('toolConfig.tools must be a non-empty list');
  const names = new Set<string>();
  config.tools.forEach((tool: unknown, k: number) => {
    if (!isObject(tool) || Object.keys(tool).length !== 1) fail(`toolConfig.tools.${k} must set exactly one of toolSpec, cachePoint`);
    if (!tool.toolSpec) return;
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
  if (body.system !== undefined) {
    if (!Array.isArray(body.system)) fail('system must be a list of SystemContentBlock');
    body.system.forEach((block: unknown, i: number) => {
      if (!isObject(block) || Object.keys(block).length !== 1) fail(`system.${i} must set exactly one member`);
      if ('text' in block && (typeof block.text !== 'string' || block.text.trim() === '')) fail(`The text field in the SystemContentBlock object at system.${i} is blank.`);
    });
  }
  const hasToolBlocks = checkMessages(body.messages);
  checkToolConfig(body.toolConfig, modelId, hasToolBlocks);
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
  const thinking = body.additionalModelRequestFields?.thinking;
  if (thinking !== undefined) {
    if (!/anthropic\.|claude/i.test(modelId)) fail('The model returned the following errors: thinking: Extra inputs are not permitted');
    const max = body.inferenceConfig?.maxTokens;
    if (thinking.type !== 'enabled' || !(thinking.budget_tokens >= 1024) || (max !== undefined && thinking.budget_tokens >= max)) fail('The model returned the following errors: thinking.budget_tokens must be ≥ 1024 and less than max_tokens');
  }
}
