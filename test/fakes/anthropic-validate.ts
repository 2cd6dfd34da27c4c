// The fake Anthropic's request checks: what the real Messages API refuses (providers.md §10.1, "Fake
// Anthropic"), with Anthropic's own wording where it is known, so a test of the gateway fails the
// way production would. Each check throws a FakeRefusal that the server renders in Anthropic's
// error envelope.
import { createHmac } from 'node:crypto';

export class FakeRefusal extends Error {
  readonly status: number;
  readonly type: string;
  constructor(status: number, type: string, message: string) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const invalid = (message: string) => new FakeRefusal(400, 'invalid_request_error', message);

export interface ValidationOptions {
  /** Model ids served; others are 404. */
  models: string[];
  /** The model refuses temperature and top_p together (Claude 4.5 and later). */
  exclusiveSampling(model: string): boolean;
  /** The first message must be a user message (the long-documented rule). */
  userFirst: boolean;
  /** Secret that signs thinking blocks, so replayed signatures can be verified. */
  signingKey: string;
}

const MESSAGE_FIELDS = new Set([
  'model', 'max_tokens', 'messages', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_p', 'top_k', 'tools', 'tool_choice',
  'thinking', 'output_config', 'service_tier', 'container', 'inference_geo', 'cache_control', 'speed', 'diagnostics', 'context_management', 'mcp_servers',
]);
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control', 'context_management', 'mcp_servers']);
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_ID = /^[a-zA-Z0-9_-]+$/;

export function signThinking(key: string, thinking: string): string {
  return createHmac('sha256', key).update(thinking).digest('base64');
}

export function knownModel(options: ValidationOptions, model: string): boolean {
  return options.models.some((id) => model === id || model.startsWith(`${id}-`));
}

/** Checks a /v1/messages (or count_tokens) body; returns nothing, throws a FakeRefusal. */
export function validate(body: unknown, options: ValidationOptions, counting = false): asserts body is Json {
  if (!isObject(body)) throw invalid('The request body is not valid JSON.');
  const allowed = counting ? COUNT_FIELDS : MESSAGE_FIELDS;
  for (const key of Object.keys(body)) if (!allowed.has(key)) throw invalid(`${key}: Extra inputs are not permitted`);
  if (typeof body.model !== 'string') throw invalid('model: Field required');
  if (!counting) {
    if (body.max_tokens === undefined) throw invalid('max_tokens: Field required');
    if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) throw invalid('max_tokens: Input should be a valid integer greater than or equal to 1');
  }
  if (!Array.isArray(body.messages)) throw invalid('messages: Field required');
  if (!knownModel(options, body.model)) throw new FakeRefusal(404, 'not_found_error', `model: ${body.model}`);
  system(body.system);
  const tools = toolNames(body.tools);
  messages(body.messages, options, tools !== null);
  toolChoice(body.tool_choice, tools);
  sampling(body, options);
  thinking(body, options);
  outputConfig(body.output_config);
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.some((s) => typeof s !== 'string' || s.trim() === '')) {
    throw invalid('stop_sequences: each stop sequence must contain non-whitespace');
  }
  const userId = isObject(body.metadata) ? body.metadata.user_id : undefined;
  if (typeof userId === 'string' && (/@/.test(userId) || /^\+?[\d\s().-]{7,}$/.test(userId))) {
    throw invalid('metadata.user_id: user_id appears to contain an email address or phone number');
  }
}

function system(value: unknown): void {
  if (value === undefined || typeof value === 'string') return;
  if (!Array.isArray(value)) throw invalid('system: Input should be a valid string or list');
  value.forEach((block, i) => {
    if (!isObject(block) || block.type !== 'text') throw invalid(`system.${i}.type: Input should be 'text'`);
    if (typeof block.text !== 'string' || block.text === '') throw invalid('system: text content blocks must be non-empty');
  });
}

function toolNames(tools: unknown): Set<string> | null {
  if (tools === undefined) return null;
  if (!Array.isArray(tools)) throw invalid('tools: Input should be a valid list');
  const names = new Set<string>();
  tools.forEach((tool, i) => {
    if (!isObject(tool)) throw invalid(`tools.${i}: Input should be an object`);
    for (const key of Object.keys(tool)) {
      if (!['name', 'description', 'input_schema', 'strict', 'cache_control', 'type', 'input_examples'].includes(key)) throw invalid(`tools.${i}.${key}: Extra inputs are not permitted`);
    }
    if (typeof tool.name !== 'string' || !NAME.test(tool.name)) throw invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    if (!isObject(tool.input_schema) || tool.input_schema.type !== 'object') throw invalid(`tools.${i}.custom.input_schema.type: Input should be 'object'`);
    names.add(tool.name);
  });
  return names;
}

function messages(list: unknown[], options: ValidationOptions, haveTools: boolean): void {
  let previousToolUses = new Set<string>();
  const seenIds = new Set<string>();
  list.forEach((message, i) => {
    if (!isObject(message)) throw invalid(`messages.${i}: Input should be an object`);
    if (message.role !== 'user' && message.role !== 'assistant') {
      throw invalid(`messages.${i}.role: unknown variant \`${String(message.role)}\`, expected one of \`user\`, \`assistant\``);
    }
    if (i === 0 && options.userFirst && message.role !== 'user') throw invalid('messages: first message must use the "user" role');
    if (i > 0 && (list[i - 1] as Json).role === message.role) {
      // Anthropic merges consecutive same-role turns; the fake does too (nothing to refuse).
    }
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (!Array.isArray(blocks)) throw invalid(`messages.${i}.content: Input should be a valid list`);
    if (blocks.length === 0 && !(message.role === 'assistant' && i === list.length - 1)) throw invalid(`messages.${i}: all messages must have non-empty content`);
    const toolUses = new Set<string>();
    let seenNonResult = false;
    blocks.forEach((block, j) => {
      const at = `messages.${i}.content.${j}`;
      if (!isObject(block)) throw invalid(`${at}: Input should be an object`);
      switch (block.type) {
        case 'text':
          if (typeof block.text !== 'string' || block.text === '') throw invalid('messages: text content blocks must be non-empty');
          seenNonResult = true;
          break;
        case 'image':
        case 'document':
          if (message.role !== 'user') throw invalid(`${at}: ${block.type} blocks are only allowed in user messages`);
          source(block, at);
          seenNonResult = true;
          break;
        case 'tool_use':
          if (message.role !== 'assistant') throw invalid(`${at}: tool_use blocks are only allowed in assistant messages`);
          if (typeof block.id !== 'string' || !TOOL_ID.test(block.id)) throw invalid(`${at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          if (seenIds.has(block.id)) throw invalid(`messages: \`tool_use\` ids must be unique`);
          if (!isObject(block.input)) throw invalid(`${at}.input: Input should be an object`);
          seenIds.add(block.id);
          toolUses.add(block.id);
          break;
        case 'tool_result':
          if (message.role !== 'user') throw invalid(`${at}: tool_result blocks are only allowed in user messages`);
          if (seenNonResult) throw invalid('messages: tool_result blocks must come before any other content in the user message');
          if (typeof block.tool_use_id !== 'string' || !previousToolUses.has(block.tool_use_id)) {
            throw invalid(`messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
          }
          previousToolUses.delete(block.tool_use_id);
          break;
        case 'thinking':
          if (typeof block.thinking !== 'string' || typeof block.signature !== 'string') throw invalid(`${at}.thinking: Field required`);
          if (block.signature !== signThinking(options.signingKey, block.thinking)) throw invalid(`${at}: Invalid \`signature\` in \`thinking\` block`);
          break;
        case 'redacted_thinking':
          if (typeof block.data !== 'string') throw invalid(`${at}.data: Field required`);
          break;
        default:
          throw invalid(`${at}.type: Input tag '${String(block.type)}' found using 'type' does not match any of the expected tags`);
      }
      if ((block.type === 'tool_use' || block.type === 'tool_result') && !haveTools) {
        throw invalid('Requests which include `tool_use` or `tool_result` blocks must define tools.');
      }
    });
    if (previousToolUses.size > 0) {
      throw invalid(`messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...previousToolUses].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
    }
    previousToolUses = toolUses;
  });
  // A trailing assistant turn with tool calls is only an unanswered call if it is not the last (prefill).
}

function source(block: Json, at: string): void {
  const src = block.source;
  if (!isObject(src)) throw invalid(`${at}.source: Field required`);
  if (src.type === 'url') {
    if (typeof src.url !== 'string' || !/^https?:\/\//.test(src.url)) throw invalid(`${at}.source.url: Input should be a valid URL`);
    return;
  }
  if (src.type === 'text' && block.type === 'document') return;
  if (src.type !== 'base64') throw invalid(`${at}.source.type: Input tag '${String(src.type)}' does not match any of the expected tags`);
  const types = block.type === 'image' ? IMAGE_TYPES : new Set(['application/pdf']);
  if (typeof src.media_type !== 'string' || !types.has(src.media_type)) throw invalid(`${at}.source.media_type: Input should be ${[...types].join(', ')}`);
  if (typeof src.data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(src.data)) throw invalid(`${at}.source.data: invalid base64 data`);
}

function toolChoice(choice: unknown, tools: Set<string> | null): void {
  if (choice === undefined) return;
  if (!isObject(choice) || !['auto', 'any', 'tool', 'none'].includes(String(choice.type))) throw invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
  if (choice.type === 'tool' && (typeof choice.name !== 'string' || !tools?.has(choice.name))) throw invalid(`tool_choice.name: Tool '${String(choice.name)}' not found in tools`);
}

function sampling(body: Json, options: ValidationOptions): void {
  const t = body.temperature;
  if (t !== undefined && (typeof t !== 'number' || t < 0 || t > 1)) throw invalid('temperature: Input should be less than or equal to 1');
  if (t !== undefined && body.top_p !== undefined && options.exclusiveSampling(String(body.model))) {
    throw invalid('`temperature` and `top_p` cannot both be specified for this model. Please use only one.');
  }
}

function thinking(body: Json, options: ValidationOptions): void {
  const config = body.thinking;
  if (config === undefined) return;
  if (!isObject(config) || !['enabled', 'disabled', 'adaptive'].includes(String(config.type))) throw invalid('thinking.type: Input should be enabled, disabled or adaptive');
  if (config.type === 'disabled') return;
  if (config.type === 'enabled') {
    const budget = config.budget_tokens;
    if (!Number.isInteger(budget) || (budget as number) < 1024) throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if ((budget as number) >= (body.max_tokens as number)) throw invalid('`max_tokens` must be greater than `thinking.budget_tokens`.');
  }
  if (body.temperature !== undefined && body.temperature !== 1) throw invalid('`temperature` may only be set to 1 when thinking is enabled or in adaptive mode.');
  if (body.top_k !== undefined) throw invalid('`top_k` is not compatible with thinking.');
  const choice = body.tool_choice;
  if (isObject(choice) && (choice.type === 'any' || choice.type === 'tool')) {
    throw invalid('Thinking may not be enabled when tool_choice forces tool use.');
  }
  const list = body.messages as Json[];
  const lastAssistant = [...list].reverse().find((m) => m.role === 'assistant');
  const blocks = Array.isArray(lastAssistant?.content) ? (lastAssistant.content as Json[]) : [];
  if (blocks.some((b) => b.type === 'tool_use') && blocks[0]?.type !== 'thinking' && blocks[0]?.type !== 'redacted_thinking') {
    throw invalid('messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.');
  }
  void options;
}

function outputConfig(config: unknown): void {
  if (config === undefined) return;
  if (!isObject(config)) throw invalid('output_config: Input should be an object');
  if (config.effort !== undefined && !['low', 'medium', 'high', 'xhigh', 'max'].includes(String(config.effort))) throw invalid('output_config.effort: Input should be low, medium, high, xhigh or max');
  const format = config.format;
  if (format === undefined) return;
  if (!isObject(format) || format.type !== 'json_schema' || !isObject(format.schema)) throw invalid('output_config.format: a json_schema format needs a schema object');
}
