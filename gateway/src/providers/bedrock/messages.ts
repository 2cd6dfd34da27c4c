// OpenAI chat history → Converse `system` and `messages`. Converse wants strict user/assistant
// alternation starting with a user turn, every tool result in the user turn right after the call,
// toolUse inputs that are objects, no blank text, and images only as inline bytes in user turns.
// Prompt-cache markers (../cache-markers.ts) become `cachePoint` blocks right after the block they
// mark, for the models that cache.
import { ApiError } from '../../http/errors.ts';
import { cacheTtl, hasCacheMarker } from '../cache-markers.ts';
import { bedrockToolName } from './tool-names.ts';

export type Block = Record<string, unknown>;
export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

const IMAGE_DATA_URL = /^data:image\/(png|jpe?g|gif|webp);base64,(.*)$/s;
/** Stands in for an empty turn or tool result, which Converse rejects (blank text is refused). */
const EMPTY_TEXT = '(empty)';

/** Where the cached prefix ends: Converse caches everything before it (tools, then system, then messages), for the marker's ttl if it names one. */
export function cachePoint(marked: unknown): Block {
  const ttl = cacheTtl(marked);
  return { cachePoint: ttl ? { type: 'default', ttl } : { type: 'default' } };
}

/** Appends the marker's cache point after the last block, once: a marker with no block before it marks nothing. */
function endCachedPrefix(blocks: Block[], marked: unknown): void {
  const last = blocks.at(-1);
  if (last && !('cachePoint' in last)) blocks.push(cachePoint(marked));
}

function unsupported(param: string, message: string): ApiError {
  return new ApiError(400, 'unsupported_parameter', message, { param });
}

function textBlock(text: unknown): Block | null {
  return typeof text === 'string' && text.trim() !== '' ? { text } : null;
}

function imageBlock(part: Record<string, unknown>, param: string): Block {
  const imageUrl = part.image_url as { url?: unknown } | string | undefined;
  const url = typeof imageUrl === 'string' ? imageUrl : imageUrl?.url;
  if (typeof url !== 'string') throw new ApiError(400, 'invalid_value', `${param}.url must be a string.`, { param: `${param}.url` });
  const match = IMAGE_DATA_URL.exec(url);
  if (!match) {
    // An http(s) URL was fetched and inlined before the translation (upstream/with-remote-images.ts) unless that is switched off.
    const what = url.startsWith('data:') ? 'a data URL of another media type' : /^https?:/i.test(url) ? 'a remote URL, and fetching them is switched off on this gateway (TOLLGATE_FETCH_IMAGE_URLS)' : 'a remote URL';
    throw unsupported(`${param}.url`, `Amazon Bedrock takes images only as base64 data URLs of png, jpeg, gif or webp; ${param}.url is ${what}.`);
  }
  const format = match[1] === 'jpg' ? 'jpeg' : match[1];
  return { image: { format, source: { bytes: match[2] } } };
}

/** The blocks of a user or tool message's content (a string or parts); `cache`: marked parts are followed by a cache point. */
function contentBlocks(content: unknown, param: string, allowImages: boolean, cache = false): Block[] {
  if (content == null) return [];
  if (typeof content === 'string') return [textBlock(content)].filter((b): b is Block => b !== null);
  if (!Array.isArray(content)) throw new ApiError(400, 'invalid_type', `${param} must be a string or an array of parts.`, { param });
  const blocks: Block[] = [];
  content.forEach((part: Record<string, unknown>, j) => {
    const partParam = `${param}[${j}]`;
    switch (part?.type) {
      case 'text': {
        const block = textBlock(part.text);
        if (block) blocks.push(block);
        break;
      }
      case 'image_url':
        if (!allowImages) throw unsupported(partParam, `Amazon Bedrock takes images only in user and tool messages (${partParam}).`);
        blocks.push(imageBlock(part, `${partParam}.image_url`));
        break;
      case 'refusal':
        if (typeof part.refusal === 'string' && part.refusal.trim() !== '') blocks.push({ text: part.refusal });
        break;
      default:
        throw unsupported(partParam, `Content parts of type '${String(part?.type)}' are not supported by Amazon Bedrock (${partParam}).`);
    }
    if (cache && hasCacheMarker(part)) endCachedPrefix(blocks, part);
  });
  return blocks;
}

/** A message's blocks, with a cache point after them when the message itself is marked. */
function markedAfter(message: Record<string, unknown>, blocks: Block[], cache: boolean): Block[] {
  if (cache && hasCacheMarker(message)) endCachedPrefix(blocks, message);
  return blocks;
}

function toolUseInput(args: unknown): Record<string, unknown> {
  // Converse rejects a toolUse whose input is not an object: a client's malformed or non-object
  // arguments become {} (the call is history; the model only needs to see that it was made).
  if (typeof args !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function assistantBlocks(message: Record<string, unknown>, i: number, cache: boolean): Block[] {
  const blocks = contentBlocks(message.content, `messages[${i}].content`, false, cache);
  const calls = message.tool_calls;
  if (Array.isArray(calls)) {
    calls.forEach((call: Record<string, unknown>, k) => {
      const fn = call?.function as { name?: unknown; arguments?: unknown } | undefined;
      if (typeof call?.id !== 'string' || typeof fn?.name !== 'string') {
        throw new ApiError(400, 'invalid_value', `messages[${i}].tool_calls[${k}] needs an id and a function name.`, { param: `messages[${i}].tool_calls[${k}]` });
      }
      blocks.push({ toolUse: { toolUseId: call.id, name: bedrockToolName(fn.name), input: toolUseInput(fn.arguments) } });
    });
  }
  return markedAfter(message, blocks, cache);
}

/** A tool result; a marker on the message or any of its parts puts a cache point after the whole result (Converse takes none inside it). */
function toolResultBlocks(message: Record<string, unknown>, i: number, cache: boolean): Block[] {
  if (typeof message.tool_call_id !== 'string') {
    throw new ApiError(400, 'missing_required_parameter', `messages[${i}].tool_call_id is required for a tool message.`, { param: `messages[${i}].tool_call_id` });
  }
  const content = contentBlocks(message.content, `messages[${i}].content`, true);
  const blocks: Block[] = [{ toolResult: { toolUseId: message.tool_call_id, content: content.length > 0 ? content : [{ text: EMPTY_TEXT }] } }];
  const marked = hasCacheMarker(message) ? message : Array.isArray(message.content) ? message.content.find(hasCacheMarker) : undefined;
  if (cache && marked) endCachedPrefix(blocks, marked);
  return blocks;
}

export interface ConvertedHistory {
  system: Block[];
  messages: ConverseMessage[];
  /** The history holds toolUse or toolResult blocks (Converse then requires a toolConfig). */
  hasToolBlocks: boolean;
}

/** `cache`: the model caches prompts, so cache markers become cache points (other models would refuse them). */
export function convertHistory(input: unknown, cache = false): ConvertedHistory {
  if (!Array.isArray(input) || input.length === 0) throw new ApiError(400, 'invalid_value', "'messages' must be a non-empty array.", { param: 'messages' });
  const system: Block[] = [];
  const turns: ConverseMessage[] = [];
  let hasToolBlocks = false;
  input.forEach((message: Record<string, unknown>, i) => {
    switch (message?.role) {
      case 'system':
      case 'developer':
        system.push(...markedAfter(message, contentBlocks(message.content, `messages[${i}].content`, false, cache), cache));
        return;
      case 'user':
        turns.push({ role: 'user', content: markedAfter(message, contentBlocks(message.content, `messages[${i}].content`, true, cache), cache) });
        return;
      case 'assistant': {
        const blocks = assistantBlocks(message, i, cache);
        if (blocks.some((b) => 'toolUse' in b)) hasToolBlocks = true;
        turns.push({ role: 'assistant', content: blocks });
        return;
      }
      case 'tool':
        hasToolBlocks = true;
        turns.push({ role: 'user', content: toolResultBlocks(message, i, cache) });
        return;
      default:
        throw unsupported(`messages[${i}].role`, `Messages of role '${String(message?.role)}' are not supported by Amazon Bedrock.`);
    }
  });
  return { system, messages: alternate(turns), hasToolBlocks };
}

/**
 * Drops empty turns, merges neighbours of one role (tool results then the user's own words in one
 * user turn, results first as Converse wants them next to the call), and starts with a user turn.
 */
function alternate(turns: ConverseMessage[]): ConverseMessage[] {
  const merged: ConverseMessage[] = [];
  for (const turn of turns) {
    if (turn.content.length === 0) continue;
    const last = merged.at(-1);
    if (last && last.role === turn.role) last.content.push(...turn.content);
    else merged.push({ role: turn.role, content: [...turn.content] });
  }
  if (merged.length === 0) throw new ApiError(400, 'invalid_value', 'Amazon Bedrock needs at least one user or assistant message with content.', { param: 'messages' });
  if (merged[0].role !== 'user') merged.unshift({ role: 'user', content: [{ text: EMPTY_TEXT }] });
  return merged;
}
