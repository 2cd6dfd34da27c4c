// What the fake Gemini answers: deterministic, and made from the request, so that a test sees its own
// input come back transformed. The last user turn is echoed; a function named in it is called (every
// declared one when it says "parallel"; the allowed one when the config forces a call) with arguments
// made from the declaration's schema; function results are summed up in the next answer; a JSON
// response fills its schema; thinking adds a thought summary; maxOutputTokens truncates.
import { createHash, randomBytes } from 'node:crypto';
import type { GeminiScript } from './gemini.ts';

type Json = Record<string, any>;

export interface Answer {
  whole: Json;
  chunks: Json[];
}

export function tokensOf(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A unit vector made from the text's hash: the same text, the same vector. */
export function embed(text: string, dimensions = 8): number[] {
  const values: number[] = [];
  for (let i = 0; values.length < dimensions; i++) {
    const digest = createHash('sha256').update(`${i}:${text}`).digest();
    for (let j = 0; j + 4 <= digest.length && values.length < dimensions; j += 4) values.push(digest.readInt32LE(j) / 2 ** 31);
  }
  const norm = Math.hypot(...values) || 1;
  return values.map((value) => Math.fround(value / norm));
}

/** A value that fits a JSON Schema (or Google's Schema): named strings, 42, true, one-item arrays. */
export function sample(schema: Json | undefined, name = 'value'): unknown {
  if (!schema || typeof schema !== 'object') return `${name}-value`;
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return sample(alternatives.find((alt: Json) => alt.type !== 'null') ?? alternatives[0], name);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = String(Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type ?? (schema.properties ? 'object' : 'string')).toLowerCase();
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, sample(value as Json, key)]));
    case 'array':
      return [sample(schema.items, name)];
    case 'integer':
    case 'number':
      return 42;
    case 'boolean':
      return true;
    default:
      return `${name}-value`;
  }
}

function describeParts(parts: Json[]): string {
  return parts
    .map((part) => {
      if (typeof part.text === 'string') return part.text;
      if (part.inlineData) return `[${part.inlineData.mimeType}, ${Buffer.from(part.inlineData.data, 'base64').length} bytes]`;
      if (part.fileData) return `[${part.fileData.mimeType} at ${part.fileData.fileUri}]`;
      return '';
    })
    .filter(Boolean)
    .join(' ');
}

export function answerFor(body: Json, model: string, script: GeminiScript, signatures: Set<string>, responseId: string): Answer {
  const contents: Json[] = body.contents;
  const last = contents.at(-1)!;
  const config: Json = body.generationConfig ?? {};
  const promptTokens = tokensOf(JSON.stringify([body.systemInstruction ?? null, contents, body.tools ?? null]));
  const cached = Math.min(script.cachedTokens ?? 0, promptTokens);
  const base = { responseId, modelVersion: `${model}-001` };

  if (script.blockReason) {
    const whole = { ...base, promptFeedback: { blockReason: script.blockReason }, usageMetadata: { promptTokenCount: promptTokens, totalTokenCount: promptTokens } };
    return { whole, chunks: [whole] };
  }

  const parts: Json[] = [];
  const userText = describeParts(last.parts);
  const results = last.parts.filter((part: Json) => part.functionResponse);
  const declarations: Json[] = (body.tools ?? []).flatMap((tool: Json) => tool.functionDeclarations ?? []);
  const calling = body.toolConfig?.functionCallingConfig ?? {};
  let calls: Json[] = [];
  if (results.length === 0 && declarations.length > 0 && calling.mode !== 'NONE') {
    const allowed = calling.allowedFunctionNames ? declarations.filter((d) => calling.allowedFunctionNames.includes(d.name)) : declarations;
    if (/parallel/i.test(userText)) calls = allowed;
    else {
      const named = allowed.find((d) => userText.includes(d.name));
      calls = named ? [named] : calling.mode === 'ANY' ? allowed.slice(0, 1) : [];
    }
  }

  let thought = '';
  if (config.thinkingConfig?.includeThoughts) thought = `Thinking about: ${userText.slice(0, 40)}`;
  let text = '';
  if (results.length > 0) text = `Tool results: ${results.map((part: Json) => `${part.functionResponse.name}=${JSON.stringify(part.functionResponse.response)}`).join('; ')}`;
  else if (calls.length === 0 && config.responseMimeType === 'application/json') text = JSON.stringify(config.responseJsonSchema || config.responseSchema ? sample(config.responseJsonSchema ?? config.responseSchema) : { echo: userText });
  else if (calls.length === 0) text = `You said: ${userText}`;

  let finishReason = script.finishReason ?? 'STOP';
  const max = config.maxOutputTokens;
  if (max !== undefined && tokensOf(text) > max) {
    text = text.slice(0, max * 4);
    finishReason = 'MAX_TOKENS';
  }
  const three = /gemini-[3-9]/.test(model);
  const callParts = calls.map((declaration, i) => {
    const part: Json = { functionCall: { name: declaration.name, args: sample(declaration.parametersJsonSchema ?? declaration.parameters ?? { type: 'object' }) } };
    if (three && i === 0) {
      part.thoughtSignature = randomBytes(24).toString('base64');
      signatures.add(part.thoughtSignature);
    }
    return part;
  });
  if (thought) parts.push({ text: thought, thought: true });
  if (text) parts.push({ text });
  parts.push(...callParts);

  const candidateTokens = tokensOf(text + JSON.stringify(callParts.map((part) => part.functionCall)));
  const thoughtTokens = tokensOf(thought);
  const usage = (candidates: number, thoughts: number) => ({
    promptTokenCount: promptTokens,
    ...(candidates > 0 ? { candidatesTokenCount: candidates } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
    ...(cached > 0 ? { cachedContentTokenCount: cached } : {}),
    totalTokenCount: promptTokens + candidates + thoughts,
  });
  const candidateCount = config.candidateCount ?? 1;
  const whole = {
    ...base,
    candidates: Array.from({ length: candidateCount }, (_, index) => ({ index, content: { role: 'model', parts }, finishReason })),
    usageMetadata: usage(candidateTokens * candidateCount, thoughtTokens * candidateCount),
  };

  // The stream: the thought, the text a few words at a time, each call whole, then finishReason alone.
  const pieces: Json[] = [];
  if (thought) pieces.push({ text: thought, thought: true });
  for (const words of text.match(/(?:\S+\s*){1,3}|\s+/g) ?? []) pieces.push({ text: words });
  pieces.push(...callParts);
  let streamed = '';
  const chunks: Json[] = pieces.map((part) => {
    if (part.functionCall) streamed += JSON.stringify(part.functionCall);
    else if (!part.thought) streamed += part.text;
    return { ...base, candidates: [{ index: 0, content: { role: 'model', parts: [part] } }], usageMetadata: usage(tokensOf(streamed), thoughtTokens) };
  });
  chunks.push({ ...base, candidates: [{ index: 0, finishReason }], usageMetadata: usage(candidateTokens, thoughtTokens) });
  return { whole, chunks };
}
