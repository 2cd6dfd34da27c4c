// OpenAI's chat history as Anthropic's: system and developer messages hoisted into `system`, tool
// results gathered into the user turn that follows the assistant's tool calls (before any text, as
// Anthropic requires), neighbours of the same role merged, content parts as content blocks. A part
// with no Anthropic equivalent is a 400 naming it, before anything is sent.
import { ApiError } from '../../http/errors.ts';

export type Block = Record<string, unknown>;
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface ConvertedHistory {
  system: Block[];
  messages: AnthropicMessage[];
  /** Some message carries a tool_use or tool_result block (Anthropic then requires `tools`). */
  hasToolBlocks: boolean;
  /** The last assistant message calls tools without the thinking blocks that came with them. */
  lastToolTurnUnsigned: boolean;
}

/** The user turn put before a conversation that opens with the assistant. */
export const OPENING_USER_TEXT = '(conversation start)';

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const DATA_URL = /^data:([^;,]+)((?:;[^;,]+)*);base64,(.*)$/s;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function bad(param: string, message: string, code = 'invalid_value'): ApiError {
  return new ApiError(400, code, message, { param });
}

/** Anthropic's tool ids match ^[a-zA-Z0-9_-]+$; ids made by other providers may not (the same mapping on calls and results keeps them paired). */
export function toolId(id: unknown): string {
  const text = typeof id === 'string' && id !== '' ? id : 'call';
  return text.replace(/[^a-zA-Z0-9_-]/g, '_');
}

export function convertHistory(input: unknown): ConvertedHistory {
  if (!Array.isArray(input) || input.length === 0) throw bad('messages', "'messages' must be a non-empty array.", 'invalid_type');
  const system: Block[] = [];
  const messages: AnthropicMessage[] = [];
  let hasToolBlocks = false;
  let lastToolTurnUnsigned = false;
  const push = (role: 'user' | 'assistant', content: Block[]) => {
    const last = messages.at(-1);
    if (last && last.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  input.forEach((message, i) => {
    if (!isObject(message)) throw bad(`messages[${i}]`, `'messages[${i}]' must be an object.`, 'invalid_type');
    const at = `messages[${i}]`;
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...markLast(textBlocks(message.content, `${at}.content`), message));
        break;
      case 'user': {
        const content = markLast(userBlocks(message.content, `${at}.content`), message);
        if (content.length === 0) throw bad(`${at}.content`, `'${at}.content' is empty: Anthropic refuses empty messages.`);
        push('user', content);
        break;
      }
      case 'assistant': {
        const content = markLast(assistantBlocks(message, at), message);
        if (content.length === 0) break; // an empty assistant turn (some agents send one) carries nothing
        const calls = content.some((block) => block.type === 'tool_use');
        hasToolBlocks ||= calls;
        lastToolTurnUnsigned = calls && !content.some((block) => block.type === 'thinking' || block.type === 'redacted_thinking');
        push('assistant', content);
        break;
      }
      case 'tool':
        hasToolBlocks = true;
        push('user', [toolResult(message, at)]);
        break;
      case 'function':
        throw bad(`${at}.role`, "The deprecated 'function' role is not supported for Anthropic models: use tools and 'tool' messages.");
      default:
        throw bad(`${at}.role`, `Unknown role '${String(message.role)}' in '${at}'.`);
    }
  });
  if (messages.length === 0) throw bad('messages', 'Anthropic needs at least one user or assistant message besides the system prompt.');
  // Anthropic wants the conversation to open with a user turn; chat apps often open with the
  // assistant's greeting. A minimal user turn goes first rather than a 400.
  if (messages[0]!.role === 'assistant') messages.unshift({ role: 'user', content: [{ type: 'text', text: OPENING_USER_TEXT }] });
  // Tool results must come before any text of their user turn (a merged user message follows them).
  for (const message of messages) {
    if (message.role === 'user' && message.content.some((block) => block.type === 'tool_result')) {
      message.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
    }
  }
  return { system, messages, hasToolBlocks, lastToolTurnUnsigned };
}

/** Text-only content (system, developer, assistant text, tool results): a string or text parts. */
function textBlocks(content: unknown, at: string): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (content == null) return [];
  if (!Array.isArray(content)) throw bad(at, `'${at}' must be a string or an array of parts.`, 'invalid_type');
  const blocks: Block[] = [];
  content.forEach((part, j) => {
    if (!isObject(part) || (part.type !== 'text' && part.type !== 'refusal')) {
      throw bad(`${at}[${j}].type`, `Only text parts are allowed in '${at}'.`);
    }
    const text = part.type === 'text' ? part.text : part.refusal;
    if (typeof text !== 'string') throw bad(`${at}[${j}].text`, `'${at}[${j}].text' must be a string.`, 'invalid_type');
    if (text !== '') blocks.push(withCache({ type: 'text', text }, part));
  });
  return blocks;
}

function userBlocks(content: unknown, at: string): Block[] {
  if (typeof content === 'string' || content == null) return textBlocks(content, at);
  if (!Array.isArray(content)) throw bad(at, `'${at}' must be a string or an array of parts.`, 'invalid_type');
  const blocks: Block[] = [];
  content.forEach((part, j) => {
    const where = `${at}[${j}]`;
    if (!isObject(part)) throw bad(where, `'${where}' must be an object.`, 'invalid_type');
    switch (part.type) {
      case 'text':
        if (typeof part.text !== 'string') throw bad(`${where}.text`, `'${where}.text' must be a string.`, 'invalid_type');
        if (part.text !== '') blocks.push(withCache({ type: 'text', text: part.text }, part));
        break;
      case 'image_url':
        blocks.push(withCache(imageBlock(part.image_url, `${where}.image_url`), part));
        break;
      case 'file':
        blocks.push(withCache(fileBlock(part.file, `${where}.file`), part));
        break;
      case 'input_audio':
        throw bad(`${where}.type`, 'Audio input is not supported by Anthropic models.', 'unsupported_content');
      default:
        throw bad(`${where}.type`, `Content parts of type '${String(part.type)}' are not supported by Anthropic models.`, 'unsupported_content');
    }
  });
  return blocks;
}

function imageBlock(image: unknown, at: string): Block {
  const url = isObject(image) ? image.url : image;
  if (typeof url !== 'string') throw bad(`${at}.url`, `'${at}.url' must be a string.`, 'invalid_type');
  const data = DATA_URL.exec(url);
  if (data) {
    const mediaType = data[1]!.toLowerCase().replace('image/jpg', 'image/jpeg');
    if (mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: mediaType, data: data[3] } };
    if (!IMAGE_TYPES.has(mediaType)) throw bad(`${at}.url`, `Anthropic takes JPEG, PNG, GIF and WebP images, not '${mediaType}'.`, 'unsupported_content');
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data: data[3] } };
  }
  if (/^https?:\/\//i.test(url)) {
    // Anthropic fetches URLs itself; a PDF link is a document, not an image.
    const pdf = /\.pdf(?:$|[?#])/i.test(url);
    return { type: pdf ? 'document' : 'image', source: { type: 'url', url } };
  }
  throw bad(`${at}.url`, `'${at}.url' must be an http(s) URL or a base64 data URL.`);
}

function fileBlock(file: unknown, at: string): Block {
  if (!isObject(file)) throw bad(at, `'${at}' must be an object.`, 'invalid_type');
  if (typeof file.file_data === 'string') {
    const data = DATA_URL.exec(file.file_data);
    if (data && data[1] === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data[3] } };
    if (data && data[1] === 'text/plain') {
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(data[3]!, 'base64').toString('utf8') } };
    }
    throw bad(`${at}.file_data`, 'Anthropic takes files as base64 data URLs of PDF or plain text.', 'unsupported_content');
  }
  throw bad(`${at}.file_id`, 'Uploaded file ids cannot be sent to Anthropic models: send the file as file_data.', 'unsupported_content');
}

function assistantBlocks(message: Json, at: string): Block[] {
  const blocks: Block[] = [];
  // Thinking blocks this gateway returned (message.thinking_blocks), replayed first as Anthropic requires.
  if (Array.isArray(message.thinking_blocks)) {
    message.thinking_blocks.forEach((block, j) => {
      if (isObject(block) && block.type === 'thinking' && typeof block.signature === 'string') {
        blocks.push({ type: 'thinking', thinking: typeof block.thinking === 'string' ? block.thinking : '', signature: block.signature });
      } else if (isObject(block) && block.type === 'redacted_thinking' && typeof block.data === 'string') {
        blocks.push({ type: 'redacted_thinking', data: block.data });
      } else {
        throw bad(`${at}.thinking_blocks[${j}]`, `'${at}.thinking_blocks[${j}]' must be a thinking block with its signature or a redacted_thinking block.`);
      }
    });
  }
  blocks.push(...textBlocks(message.content, `${at}.content`));
  const calls = message.tool_calls;
  if (calls == null) return blocks;
  if (!Array.isArray(calls)) throw bad(`${at}.tool_calls`, `'${at}.tool_calls' must be an array.`, 'invalid_type');
  calls.forEach((call, j) => {
    const where = `${at}.tool_calls[${j}]`;
    const fn = isObject(call) ? call.function : undefined;
    if (!isObject(call) || !isObject(fn) || typeof fn.name !== 'string') throw bad(where, `'${where}' must be a function call with a name.`, 'invalid_type');
    blocks.push({ type: 'tool_use', id: toolId(call.id), name: fn.name, input: toolInput(fn.arguments, `${where}.function.arguments`) });
  });
  return blocks;
}

/** Anthropic wants the arguments as a JSON object; OpenAI carries them as text (empty for no arguments). */
function toolInput(args: unknown, at: string): Json {
  if (args == null || args === '') return {};
  if (typeof args !== 'string') throw bad(at, `'${at}' must be a JSON string.`, 'invalid_type');
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw bad(at, `'${at}' is not valid JSON: Anthropic needs the arguments as a JSON object.`);
  }
  if (!isObject(parsed)) throw bad(at, `'${at}' must be a JSON object for Anthropic models.`);
  return parsed;
}

function toolResult(message: Json, at: string): Block {
  if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '') {
    throw bad(`${at}.tool_call_id`, `'${at}.tool_call_id' is required.`, 'missing_required_parameter');
  }
  const content = textBlocks(message.content, `${at}.content`);
  const block: Block = { type: 'tool_result', tool_use_id: toolId(message.tool_call_id) };
  // A cache marker on the message or one of its parts goes on the tool_result itself: Anthropic's
  // endpoints do not all take one inside tool_result.content.
  const marker = isObject(message.cache_control) ? message.cache_control : content.find((inner) => inner.cache_control)?.cache_control;
  for (const inner of content) delete inner.cache_control;
  if (marker) block.cache_control = marker;
  // An empty result is sent with no content (Anthropic refuses empty text blocks).
  if (content.length > 0) block.content = content;
  return block;
}

/** A marker on a whole message (LiteLLM's form of the extension) goes on its last block. */
function markLast(blocks: Block[], message: Json): Block[] {
  const last = blocks.at(-1);
  if (last && isObject(message.cache_control) && last.type !== 'thinking' && last.type !== 'redacted_thinking') last.cache_control = message.cache_control;
  return blocks;
}

/** Anthropic-style `cache_control` on an OpenAI part (a common extension) is kept on its block. */
function withCache(block: Block, part: Json): Block {
  if (isObject(part.cache_control)) block.cache_control = part.cache_control;
  return block;
}
