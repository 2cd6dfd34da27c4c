// The fake Anthropic's "model": a deterministic Message computed from the request (see the rules at
// the top of anthropic.ts), so every figure a test asserts can be derived from what it sent.
import { signThinking, type ValidationOptions } from './anthropic-validate.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface FakeAnswer {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Json[];
  stop_reason: string;
  stop_sequence: string | null;
  stop_details: null;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
    cache_creation: null;
    server_tool_use: null;
    service_tier: 'standard';
    inference_geo: null;
    output_tokens_details: { thinking_tokens: number } | null;
    speed: null;
  };
}

const words = (text: string): number => text.split(/\s+/).filter(Boolean).length;

function blocksOf(content: unknown): Json[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? (content as Json[]) : [];
}

function textOf(blocks: Json[]): string {
  return blocks.filter((b) => b.type === 'text').map((b) => String(b.text)).join(' ');
}

/** A value of a JSON schema, from the last user text. */
function valueFor(schema: unknown, seed: string): unknown {
  if (!isObject(schema)) return seed;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const out: Json = {};
      const properties = isObject(schema.properties) ? schema.properties : {};
      for (const [name, sub] of Object.entries(properties)) out[name] = valueFor(sub, seed);
      if (Object.keys(properties).length === 0 && schema.additionalProperties !== false && schema.additionalProperties !== undefined) out.echo = seed;
      return out;
    }
    case 'array':
      return [valueFor(schema.items, seed)];
    case 'number':
    case 'integer':
      return seed.length;
    case 'boolean':
      return true;
    default:
      return seed;
  }
}

export function answer(body: Json, options: ValidationOptions, id: string, cache?: { read: number; write: number }): FakeAnswer {
  const messages = (body.messages as Json[]).map((m) => ({ role: m.role, blocks: blocksOf(m.content) }));
  const system = typeof body.system === 'string' ? body.system : textOf(Array.isArray(body.system) ? (body.system as Json[]) : []);
  let inputTokens = words(system);
  for (const m of messages) {
    inputTokens += words(textOf(m.blocks));
    for (const b of m.blocks) {
      if (b.type === 'image' || b.type === 'document') inputTokens += 1;
      if (b.type === 'tool_result') inputTokens += words(textOf(blocksOf(b.content)));
      if (b.type === 'tool_use') inputTokens += words(JSON.stringify(b.input));
    }
  }
  const last = messages.at(-1)!;
  const lastText = textOf(last.blocks);
  const results = last.blocks.filter((b) => b.type === 'tool_result');
  const content: Json[] = [];
  let outputTokens = 0;
  let thinkingTokens = 0;
  const thinking = isObject(body.thinking) && body.thinking.type !== 'disabled';
  if (thinking) {
    const text = `Thinking about: ${lastText}`;
    content.push({ type: 'thinking', thinking: text, signature: signThinking(options.signingKey, text) });
    thinkingTokens = words(text);
    outputTokens += thinkingTokens;
  }

  const tools = Array.isArray(body.tools) ? (body.tools as Json[]) : [];
  const choice = isObject(body.tool_choice) ? body.tool_choice : { type: 'auto' };
  let calls: Json[] = [];
  if (results.length === 0 && tools.length > 0 && choice.type !== 'none') {
    if (choice.type === 'any') calls = tools;
    else if (choice.type === 'tool') calls = tools.filter((t) => t.name === choice.name);
    else calls = tools.filter((t) => lastText.includes(String(t.name)));
    if (choice.disable_parallel_tool_use === true) calls = calls.slice(0, 1);
  }

  let stopReason = 'end_turn';
  let stopSequence: string | null = null;
  if (calls.length > 0) {
    calls.forEach((tool, i) => {
      const input = valueFor(tool.input_schema, lastText) as Json;
      content.push({ type: 'tool_use', id: `toolu_fake_${id.slice(-6)}_${i}`, name: tool.name, input });
      outputTokens += words(JSON.stringify(input));
    });
    stopReason = 'tool_use';
  } else {
    let reply: string;
    const format = isObject(body.output_config) && isObject(body.output_config.format) ? body.output_config.format : null;
    if (format) reply = JSON.stringify(valueFor(format.schema, lastText));
    else if (results.length > 0) reply = `Tool results: ${results.map((r) => textOf(blocksOf(r.content))).join('; ')}`;
    else {
      const media = last.blocks.filter((b) => b.type === 'image' || b.type === 'document').map((b) => describeSource(b));
      reply = `You said: ${lastText}${media.length > 0 ? ` [images: ${media.join(', ')}]` : ''}`;
    }
    const stops = Array.isArray(body.stop_sequences) ? (body.stop_sequences as string[]) : [];
    // Generation stops at whichever sequence comes first in the text, whatever its place in the list.
    const first = stops.map((stop) => ({ stop, at: reply.indexOf(stop) })).filter((s) => s.at >= 0).sort((a, b) => a.at - b.at)[0];
    if (first) {
      reply = reply.slice(0, first.at);
      stopReason = 'stop_sequence';
      stopSequence = first.stop;
    }
    const budget = (body.max_tokens as number) - outputTokens;
    const replyWords = reply.split(' ');
    if (replyWords.length > budget) {
      reply = replyWords.slice(0, Math.max(0, budget)).join(' ');
      stopReason = 'max_tokens';
      stopSequence = null;
    }
    if (reply !== '') content.push({ type: 'text', text: reply, citations: null });
    outputTokens += words(reply);
  }
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: String(body.model),
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    stop_details: null,
    usage: {
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      cache_read_input_tokens: cache?.read ?? 0,
      cache_creation_input_tokens: cache?.write ?? 0,
      cache_creation: null,
      server_tool_use: null,
      service_tier: 'standard',
      inference_geo: null,
      output_tokens_details: thinking ? { thinking_tokens: thinkingTokens } : null,
      speed: null,
    },
  };
}

function describeSource(block: Json): string {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'url') return `${String(block.type)} url ${String(source.url)}`;
  return `${String(block.type)} ${String(source.media_type)} ${String(source.type)}`;
}
