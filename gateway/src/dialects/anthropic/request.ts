// An Anthropic Messages API request (POST /v1/messages, as Claude Code and the Anthropic SDKs send
// it) turned into the OpenAI chat completions request every backend answers: service-test, an
// OpenAI-compatible upstream, or a translated provider (which turns it into its own API in turn).
// Pure: a request the gateway cannot express is a 400 naming the field, in the Messages API's words.
// Prompt-cache markers (`cache_control`) are kept on the chat request's parts, messages and tools, for
// the providers that cache at them (providers/cache-markers.ts).
import { ApiError, invalidType, missingParam } from '../../http/errors.ts';
import { madeByDialect } from '../../providers/cache-markers.ts';
import { THINKING_BUDGET } from '../../providers/claude-thinking.ts';
import type { ThinkingEffort } from '../../providers/reasoning-effort.ts';
import { fromAnthropicToolId } from './tool-ids.ts';

type Json = Record<string, unknown>;

/** Anthropic's server tools: only Anthropic runs them; another backend cannot. */
const SERVER_TOOL = /^(web_search|web_fetch|code_execution|computer|bash|text_editor|memory|tool_search|mcp)/;
/** Top-level fields that change nothing another backend can honour, accepted and left out. */
const IGNORED = new Set(['top_k', 'service_tier', 'container', 'context_management', 'inference_geo']);
/**
 * The thinking efforts from the least budget to the most, `minimal` left out: a client that asks for
 * thinking wants some, and OpenAI's reasoning models do not all take `minimal` (nor think with it).
 */
const EFFORTS_BY_BUDGET = (Object.keys(THINKING_BUDGET) as ThinkingEffort[]).filter((effort) => effort !== 'minimal').sort((a, b) => THINKING_BUDGET[a] - THINKING_BUDGET[b]);
const KNOWN = new Set(['model', 'messages', 'max_tokens', 'system', 'stream', 'temperature', 'top_p', 'stop_sequences', 'tools', 'tool_choice', 'metadata', 'thinking', 'output_config', 'cache_control', ...IGNORED]);

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

export interface TranslatedMessagesRequest {
  chat: Json;
  stream: boolean;
}

/**
 * `lenient`: the request goes to Anthropic as it came and this translation only sizes it for
 * the limits: what only Anthropic understands (server tools, new block types, new fields) is left out
 * of the estimate rather than refused, and Anthropic judges it.
 */
export function messagesToChat(body: Json, lenient = false): TranslatedMessagesRequest {
  if (!lenient) for (const key of Object.keys(body)) if (!KNOWN.has(key)) throw new ApiError(400, 'invalid_request', `${key}: Extra inputs are not permitted`, { param: key });
  if (body.model === undefined) throw missingParam('model');
  if (body.max_tokens === undefined) throw missingParam('max_tokens');
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) throw new ApiError(400, 'invalid_value', 'max_tokens: Input should be an integer greater than or equal to 1', { param: 'max_tokens' });
  if (!Array.isArray(body.messages)) throw body.messages === undefined ? missingParam('messages') : invalidType('messages', 'an array');
  const stream = body.stream === true;
  const messages: Json[] = [];
  const system = systemContent(body.system);
  if (system !== null) messages.push({ role: 'system', content: system });
  body.messages.forEach((message, i) => messages.push(...convertMessage(message, i, lenient)));
  // Automatic caching (a top-level marker) caches up to the last block: a marker on the last message.
  const last = messages.at(-1);
  if (isObject(body.cache_control) && last && !isObject(last.cache_control)) last.cache_control = body.cache_control;
  const chat: Json = madeByDialect({ model: body.model, messages, max_completion_tokens: body.max_tokens });
  if (stream) {
    chat.stream = true;
    // The usage chunk fills message_delta's usage.
    chat.stream_options = { include_usage: true };
  }
  if (body.temperature !== undefined) chat.temperature = body.temperature;
  if (body.top_p !== undefined) chat.top_p = body.top_p;
  if (body.stop_sequences !== undefined) {
    if (!Array.isArray(body.stop_sequences)) throw invalidType('stop_sequences', 'an array of strings');
    if (body.stop_sequences.length > 4) throw new ApiError(400, 'invalid_value', 'stop_sequences: at most 4 stop sequences can be sent to a model that is not Anthropic’s', { param: 'stop_sequences' });
    if (body.stop_sequences.length > 0) chat.stop = body.stop_sequences;
  }
  if (isObject(body.metadata) && typeof body.metadata.user_id === 'string') chat.user = body.metadata.user_id;
  if (body.tools !== undefined) chat.tools = convertTools(body.tools, lenient);
  if (body.tool_choice !== undefined) Object.assign(chat, convertToolChoice(body.tool_choice));
  const effort = reasoningEffort(body.thinking, outputEffort(body.output_config, lenient));
  if (effort) chat.reasoning_effort = effort;
  return { chat, stream };
}

/** The system prompt: its text blocks joined, or kept as parts when one carries a cache marker (the marker says where). */
function systemContent(system: unknown): string | Json[] | null {
  if (system === undefined || system === null) return null;
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw invalidType('system', 'a string or an array of text blocks');
  const parts = system.map((block, i) => {
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') throw invalidType(`system.${i}`, 'a text block');
    return withMarker({ type: 'text', text: block.text }, block);
  });
  return parts.some((part) => part.cache_control) ? parts : parts.map((part) => part.text).join('\n\n');
}

/** A block's cache marker, kept on what it becomes. */
function withMarker(target: Json, block: Json): Json {
  if (isObject(block.cache_control)) target.cache_control = block.cache_control;
  return target;
}

/** `output_config.effort` (how hard Claude 4.6 and newer think adaptively), when given; relayed to Anthropic (`lenient`), Anthropic judges the rest. */
function outputEffort(config: unknown, lenient: boolean): string | null {
  if (config === undefined || config === null) return null;
  if (lenient) return isObject(config) && typeof config.effort === 'string' ? config.effort : null;
  if (!isObject(config)) throw invalidType('output_config', 'an object');
  for (const key of Object.keys(config)) {
    if (key !== 'effort') throw new ApiError(400, 'invalid_value', `output_config.${key}: only output_config.effort can be sent to a model that is not Anthropic’s`, { param: `output_config.${key}` });
  }
  if (config.effort === undefined) return null;
  if (!['low', 'medium', 'high', 'xhigh', 'max'].includes(config.effort as string)) {
    throw new ApiError(400, 'invalid_value', "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'", { param: 'output_config.effort' });
  }
  return config.effort as string;
}

function convertMessage(message: unknown, i: number, lenient: boolean): Json[] {
  const where = `messages.${i}`;
  if (!isObject(message)) throw invalidType(where, 'an object');
  if (message.role !== 'user' && message.role !== 'assistant') throw new ApiError(400, 'invalid_value', `${where}.role: Input should be 'user' or 'assistant'`, { param: `${where}.role` });
  const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  if (!Array.isArray(blocks)) throw invalidType(`${where}.content`, 'a string or an array of content blocks');
  return message.role === 'user' ? userMessages(blocks, where, lenient) : [assistantMessage(blocks, where, lenient)];
}

/** Tool results become tool messages, placed before the user's other content (OpenAI wants them right after the calls). */
function userMessages(blocks: unknown[], where: string, lenient: boolean): Json[] {
  const tools: Json[] = [];
  const parts: Json[] = [];
  blocks.forEach((block, j) => {
    const at = `${where}.content.${j}`;
    if (!isObject(block)) throw invalidType(at, 'a content block');
    if (block.type === 'tool_result') {
      const { text, images, marked } = toolResultContent(block.content, at, lenient);
      const result: Json = { role: 'tool', tool_call_id: fromAnthropicToolId(String(block.tool_use_id ?? '')), content: block.is_error === true && text ? `Error: ${text}` : text };
      // A marker on the result or inside it ends the cached prefix after the whole result.
      const marker = isObject(block.cache_control) ? block.cache_control : marked;
      if (marker) result.cache_control = marker;
      tools.push(result);
      parts.push(...images);
      return;
    }
    const part = contentPart(block, at, lenient);
    if (part) parts.push(part);
  });
  const out = [...tools];
  if (parts.length > 0) out.push({ role: 'user', content: parts.length === 1 && parts[0].type === 'text' && !parts[0].cache_control ? parts[0].text : parts });
  return out;
}

function toolResultContent(content: unknown, at: string, lenient: boolean): { text: string; images: Json[]; marked: Json | null } {
  if (content === undefined) return { text: '', images: [], marked: null };
  if (typeof content === 'string') return { text: content, images: [], marked: null };
  if (!Array.isArray(content)) throw invalidType(`${at}.content`, 'a string or an array of content blocks');
  const texts: string[] = [];
  const images: Json[] = [];
  let marked: Json | null = null;
  content.forEach((block, k) => {
    const part = isObject(block) ? contentPart(block, `${at}.content.${k}`, lenient) : null;
    if (part?.type === 'text') {
      texts.push(part.text as string);
      if (isObject(part.cache_control)) marked = part.cache_control;
    } else if (part) images.push(part);
  });
  return { text: texts.join('\n'), images, marked };
}

function contentPart(block: Json, at: string, lenient: boolean): Json | null {
  const part = contentPartOf(block, at, lenient);
  return part && withMarker(part, block);
}

function contentPartOf(block: Json, at: string, lenient: boolean): Json | null {
  switch (block.type) {
    case 'text':
      if (typeof block.text !== 'string') throw invalidType(`${at}.text`, 'a string');
      return { type: 'text', text: block.text };
    case 'image': {
      const source = block.source;
      if (isObject(source) && source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
      if (isObject(source) && source.type === 'url') return { type: 'image_url', image_url: { url: source.url } };
      throw new ApiError(400, 'invalid_value', `${at}.source: an image source of type base64 or url is required`, { param: `${at}.source` });
    }
    case 'document': {
      const source = block.source;
      if (isObject(source) && source.type === 'base64') return { type: 'file', file: { filename: typeof block.title === 'string' ? block.title : 'document.pdf', file_data: `data:${source.media_type};base64,${source.data}` } };
      if (isObject(source) && source.type === 'text') return { type: 'text', text: String(source.data ?? '') };
      throw new ApiError(400, 'invalid_value', `${at}.source: only base64 and text documents can be sent to a model that is not Anthropic’s`, { param: `${at}.source` });
    }
    // Thinking the model did on an earlier turn: another backend has nothing to check it against.
    case 'thinking':
    case 'redacted_thinking':
      return null;
    default:
      if (lenient) return null;
      throw new ApiError(400, 'invalid_value', `${at}.type: content blocks of type '${String(block.type)}' cannot be sent to a model that is not Anthropic’s`, { param: `${at}.type` });
  }
}

function assistantMessage(blocks: unknown[], where: string, lenient: boolean): Json {
  const texts: string[] = [];
  const calls: Json[] = [];
  let marker: Json | null = null;
  blocks.forEach((block, j) => {
    const at = `${where}.content.${j}`;
    if (!isObject(block)) throw invalidType(at, 'a content block');
    if (isObject(block.cache_control)) marker = block.cache_control;
    if (block.type === 'text') texts.push(String(block.text ?? ''));
    else if (block.type === 'tool_use') calls.push({ id: fromAnthropicToolId(String(block.id)), type: 'function', function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) } });
    else if (block.type !== 'thinking' && block.type !== 'redacted_thinking' && !lenient) throw new ApiError(400, 'invalid_value', `${at}.type: assistant content blocks of type '${String(block.type)}' cannot be sent to a model that is not Anthropic’s`, { param: `${at}.type` });
  });
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (calls.length > 0) message.tool_calls = calls;
  // The assistant's text and calls become one message: a marker on any of its blocks ends the cached
  // prefix after the message (Claude Code marks the last block).
  if (marker) message.cache_control = marker;
  return message;
}

function convertTools(tools: unknown, lenient: boolean): Json[] {
  if (!Array.isArray(tools)) throw invalidType('tools', 'an array');
  const own = lenient ? tools.filter((tool) => !(isObject(tool) && typeof tool.type === 'string' && tool.type !== 'custom')) : tools;
  return own.map((tool, i) => {
    if (!isObject(tool)) throw invalidType(`tools.${i}`, 'an object');
    if (typeof tool.type === 'string' && tool.type !== 'custom' && SERVER_TOOL.test(tool.type)) {
      throw new ApiError(400, 'unsupported_value', `tools.${i}: the server tool '${tool.type}' runs only on Anthropic’s own models; this model is served by another provider. Remove it, or use a model served by Anthropic.`, { param: `tools.${i}.type` });
    }
    if (typeof tool.name !== 'string') throw missingParam(`tools.${i}.name`);
    const fn: Json = { name: tool.name, parameters: isObject(tool.input_schema) ? tool.input_schema : { type: 'object', properties: {} } };
    if (typeof tool.description === 'string') fn.description = tool.description;
    return withMarker({ type: 'function', function: fn }, tool);
  });
}

function convertToolChoice(choice: unknown): Json {
  if (!isObject(choice)) throw invalidType('tool_choice', 'an object');
  const out: Json = {};
  if (choice.type === 'auto') out.tool_choice = 'auto';
  else if (choice.type === 'any') out.tool_choice = 'required';
  else if (choice.type === 'none') out.tool_choice = 'none';
  else if (choice.type === 'tool' && typeof choice.name === 'string') out.tool_choice = { type: 'function', function: { name: choice.name } };
  else throw new ApiError(400, 'invalid_value', "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", { param: 'tool_choice.type' });
  if (choice.disable_parallel_tool_use === true && choice.type !== 'none') out.parallel_tool_calls = false;
  return out;
}

/**
 * A thinking budget in OpenAI's coarser words: what a reasoning model on another backend understands.
 * The smallest effort whose budget in the shared Claude table covers the one asked for, so that a
 * Claude model behind another dialect (Bedrock) thinks at least as long as asked; beyond the table, `max`.
 * Adaptive thinking takes its `output_config.effort` as it is (medium without one).
 */
function reasoningEffort(thinking: unknown, effort: string | null): string | null {
  if (!isObject(thinking) || thinking.type === 'disabled') return null;
  if (thinking.type === 'adaptive') return effort ?? 'medium';
  const budget = Number(thinking.budget_tokens);
  if (!Number.isFinite(budget)) return 'medium';
  return EFFORTS_BY_BUDGET.find((effort) => THINKING_BUDGET[effort] >= budget) ?? 'max';
}
