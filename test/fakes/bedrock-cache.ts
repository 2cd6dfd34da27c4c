// The fake Bedrock's prompt cache: Converse caches the prefix before each `cachePoint` (tools, then
// system, then messages, in that order), once the prefix reaches the model's minimum; a later request
// whose prefix up to one of its cache points is the same reads it back. Usage then reports what was
// read (cacheReadInputTokens) and written (cacheWriteInputTokens) apart from inputTokens, as AWS does.
// Tokens are counted as answerFor counts input (words of text, tool results and tool inputs).
import { createHash } from 'node:crypto';

type Json = Record<string, any>;

/** Claude's smallest cacheable prefix on Bedrock (Sonnet and Opus): a shorter one is not cached, silently. */
export const MIN_CACHED_TOKENS = 1024;

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function tokensOf(block: Json): number {
  if (typeof block.text === 'string') return words(block.text);
  if (block.toolResult) return (block.toolResult.content as Json[]).reduce((sum, item) => sum + tokensOf(item), 0);
  if (block.toolUse) return words(JSON.stringify(block.toolUse.input));
  return 0;
}

interface Point {
  key: string;
  tokens: number;
}

/** Each cache point of a request: the hash of everything before it (a cache is the model's own), and the input tokens before it. */
function cachePoints(request: Json, modelId: string): Point[] {
  const hash = createHash('sha256').update(`${modelId}\n`);
  const points: Point[] = [];
  let tokens = 0;
  const walk = (where: string, blocks: Json[]) => {
    for (const block of blocks) {
      if (block.cachePoint) points.push({ key: hash.copy().digest('hex'), tokens });
      else {
        hash.update(`${where}:${JSON.stringify(block)}\n`);
        if (where !== 'tools') tokens += tokensOf(block);
      }
    }
  };
  walk('tools', request.toolConfig?.tools ?? []);
  walk('system', request.system ?? []);
  for (const message of request.messages as Json[]) walk(message.role, message.content);
  return points;
}

export class FakePromptCache {
  readonly #prefixes = new Set<string>();

  /** The cache usage of a request (read and written tokens), null when it has no cache point; remembers what it wrote. */
  account(request: Json, modelId: string): { cacheReadInputTokens: number; cacheWriteInputTokens: number } | null {
    const points = cachePoints(request, modelId);
    if (points.length === 0) return null;
    const cacheable = points.filter((point) => point.tokens >= MIN_CACHED_TOKENS);
    const read = Math.max(0, ...cacheable.filter((point) => this.#prefixes.has(point.key)).map((point) => point.tokens));
    const longest = Math.max(0, ...cacheable.map((point) => point.tokens));
    for (const point of cacheable) this.#prefixes.add(point.key);
    return { cacheReadInputTokens: read, cacheWriteInputTokens: longest - read };
  }
}
