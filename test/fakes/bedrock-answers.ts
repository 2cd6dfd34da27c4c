// What the fake Bedrock answers: deterministic, and a function of the request, so a test can tell
// that the gateway sent what it meant to. Tool results are echoed back; a tool is called when the
// client forces one or names one in its last words; structured output follows the schema; images are
// counted. Token counts are words, the same way on both sides. A stop sequence in the reply cuts it
// there (stopReason `stop_sequence`); the sequence is named in `additionalModelResponseFields` when the
// request asks for `/stop_sequence` in `additionalModelResponseFieldPaths`, as Claude on Bedrock does.

type Json = Record<string, any>;

export type AnswerBlock = { text: string } | { toolUse: { toolUseId: string; name: string; input: Json } } | { reasoning: string; signature: string };

export interface Answer {
  blocks: AnswerBlock[];
  stopReason: string;
  /** Asked for by the request's additionalModelResponseFieldPaths. */
  additionalModelResponseFields?: Json;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number; cacheReadInputTokens?: number; cacheWriteInputTokens?: number };
}

export const PLACEHOLDER_PREFIX = 'tollgate_placeholder';

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function textsOf(blocks: Json[]): string[] {
  const out: string[] = [];
  for (const block of blocks) {
    if (typeof block.text === 'string') out.push(block.text);
    if (block.toolResult) out.push(...textsOf(block.toolResult.content));
    if (block.toolUse) out.push(JSON.stringify(block.toolUse.input));
  }
  return out;
}

/** A value that satisfies a (simple) JSON schema, filled from the user's words. */
export function exampleOf(schema: Json | undefined, words: string): unknown {
  switch (schema?.type) {
    case 'object': {
      const out: Json = {};
      for (const [key, sub] of Object.entries<Json>(schema.properties ?? {})) out[key] = exampleOf(sub, words);
      return out;
    }
    case 'array':
      return [exampleOf(schema.items, words)];
    case 'number':
    case 'integer':
      return words.length;
    case 'boolean':
      return true;
    default:
      return Array.isArray(schema?.enum) ? schema.enum[0] : words;
  }
}

let toolUseCounter = 0;

function toolCalls(request: Json, lastText: string): AnswerBlock[] {
  const tools: Json[] = (request.toolConfig?.tools ?? []).map((t: Json) => t.toolSpec).filter((s: Json | undefined) => s && !s.name.startsWith(PLACEHOLDER_PREFIX));
  if (tools.length === 0) return [];
  const choice = request.toolConfig?.toolChoice;
  let chosen: Json[];
  if (choice?.tool) chosen = tools.filter((t) => t.name === choice.tool.name);
  else if (choice?.any) chosen = [tools[0]];
  else chosen = tools.filter((t) => lastText.includes(t.name));
  return chosen.map((tool) => ({ toolUse: { toolUseId: `tooluse_fake${++toolUseCounter}`, name: tool.name, input: exampleOf(tool.inputSchema.json, lastText) as Json } }));
}

export function answerFor(request: Json, overrides: { text?: string; stopReason?: string; usage?: Partial<Answer['usage']> } = {}): Answer {
  const messages: Json[] = request.messages;
  const last = messages[messages.length - 1];
  const lastText = textsOf(last.content.filter((b: Json) => typeof b.text === 'string')).join(' ');
  const results = last.content.filter((b: Json) => b.toolResult).map((b: Json) => textsOf(b.toolResult.content).join(' '));
  const images = last.content.filter((b: Json) => b.image).map((b: Json) => `${b.image.format} ${Buffer.from(b.image.source.bytes ?? '', 'base64').length} bytes`);
  const blocks: AnswerBlock[] = [];
  if (request.additionalModelRequestFields?.thinking) blocks.push({ reasoning: `Thinking about: ${lastText}`, signature: 'sig-fake' });
  const calls = results.length === 0 ? toolCalls(request, lastText) : [];
  const schema = request.outputConfig?.textFormat?.structure?.jsonSchema?.schema;
  let text: string;
  if (overrides.text !== undefined) text = overrides.text;
  else if (results.length > 0) text = `Tool results: ${results.join(' | ')}`;
  else if (calls.length > 0) text = `Calling ${calls.map((c) => ('toolUse' in c ? c.toolUse.name : '')).join(' and ')}.`;
  else if (schema) text = JSON.stringify(exampleOf(JSON.parse(schema), lastText));
  else text = `You said: ${lastText}${images.length > 0 ? ` [images: ${images.join(', ')}]` : ''}`;
  let stopReason = overrides.stopReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
  let additionalModelResponseFields: Json | undefined;
  const stops: string[] = request.inferenceConfig?.stopSequences ?? [];
  const first = stops.map((stop) => ({ stop, at: text.indexOf(stop) })).filter((s) => s.at !== -1).sort((a, b) => a.at - b.at)[0];
  if (first && calls.length === 0 && overrides.stopReason === undefined) {
    text = text.slice(0, first.at);
    stopReason = 'stop_sequence';
    if ((request.additionalModelResponseFieldPaths ?? []).includes('/stop_sequence')) additionalModelResponseFields = { stop_sequence: first.stop };
  }
  const maxTokens = request.inferenceConfig?.maxTokens;
  if (maxTokens !== undefined && words(text) > maxTokens && calls.length === 0) {
    text = text.split(/\s+/).slice(0, maxTokens).join(' ');
    stopReason = 'max_tokens';
  }
  blocks.push({ text }, ...calls);
  const promptTokens = words([...textsOf(request.system ?? []), ...messages.flatMap((m) => textsOf(m.content))].join(' '));
  // Bedrock's inputTokens leave out what was read from or written to the cache.
  const inputTokens = promptTokens - (overrides.usage?.cacheReadInputTokens ?? 0) - (overrides.usage?.cacheWriteInputTokens ?? 0);
  const outputTokens = words(text) + calls.length * 5;
  const usage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, ...overrides.usage };
  usage.totalTokens = usage.inputTokens + usage.outputTokens + (usage.cacheReadInputTokens ?? 0) + (usage.cacheWriteInputTokens ?? 0);
  return { blocks, stopReason, usage, ...(additionalModelResponseFields ? { additionalModelResponseFields } : {}) };
}

/** Converse's JSON answer for a planned answer. */
export function converseBody(answer: Answer): Json {
  const content = answer.blocks.map((block) =>
    'reasoning' in block ? { reasoningContent: { reasoningText: { text: block.reasoning, signature: block.signature } } } : block,
  );
  const fields = answer.additionalModelResponseFields ? { additionalModelResponseFields: answer.additionalModelResponseFields } : {};
  return { output: { message: { role: 'assistant', content } }, stopReason: answer.stopReason, ...fields, usage: answer.usage, metrics: { latencyMs: 12 } };
}

/** ConverseStream's events (type and payload) for a planned answer, in the order AWS sends them. */
export function streamEvents(answer: Answer): Array<[string, Json]> {
  const events: Array<[string, Json]> = [['messageStart', { role: 'assistant' }]];
  answer.blocks.forEach((block, index) => {
    const contentBlockIndex = index;
    if ('reasoning' in block) {
      events.push(['contentBlockDelta', { contentBlockIndex, delta: { reasoningContent: { text: block.reasoning } } }]);
      events.push(['contentBlockDelta', { contentBlockIndex, delta: { reasoningContent: { signature: block.signature } } }]);
    } else if ('text' in block) {
      // Text blocks have no contentBlockStart; the text comes in pieces of a few words.
      const pieces = block.text.match(/\S+\s*|\s+/g) ?? [];
      for (let i = 0; i < pieces.length; i += 3) events.push(['contentBlockDelta', { contentBlockIndex, delta: { text: pieces.slice(i, i + 3).join('') } }]);
    } else {
      events.push(['contentBlockStart', { contentBlockIndex, start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } } }]);
      const input = JSON.stringify(block.toolUse.input);
      // A tool without arguments gets no input delta at all, as Bedrock sends it.
      if (input !== '{}') {
        const half = Math.ceil(input.length / 2);
        events.push(['contentBlockDelta', { contentBlockIndex, delta: { toolUse: { input: input.slice(0, half) } } }]);
        events.push(['contentBlockDelta', { contentBlockIndex, delta: { toolUse: { input: input.slice(half) } } }]);
      }
    }
    events.push(['contentBlockStop', { contentBlockIndex }]);
  });
  events.push(['messageStop', { stopReason: answer.stopReason, ...(answer.additionalModelResponseFields ? { additionalModelResponseFields: answer.additionalModelResponseFields } : {}) }]);
  events.push(['metadata', { usage: answer.usage, metrics: { latencyMs: 12 } }]);
  return events;
}
