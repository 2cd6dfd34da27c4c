// POST /v1/embeddings answered by service-test: deterministic feature-hashed vectors (see
// service-test/embeddings.ts), with OpenAI's parameter checks and limits.
import type { Context } from 'koa';
import type { JsonObject } from '../../http/body.ts';
import { invalidRequest, invalidType, invalidValue, missingParam, unknownParam } from '../../http/errors.ts';
import { DEFAULT_DIMENSIONS, MAX_DIMENSIONS, embedFeatures, textFeatures, toBase64, tokenFeatures } from '../../service-test/embeddings.ts';
import { TokenTally } from '../../service-test/tokens.ts';
import { exchangeOf, type ResolvedModel } from '../model-access.ts';

/** OpenAI's documented limits for its embedding models, kept so clients meet the same walls here. */
const MAX_INPUTS = 2048;
const MAX_TOKENS_PER_INPUT = 8192;
const MAX_TOKENS_PER_REQUEST = 300_000;
const KNOWN_PARAMS = new Set(['input', 'model', 'encoding_format', 'dimensions', 'user']);
const INPUT_SHAPES = 'a string, an array of strings, an array of token ids, or an array of token-id arrays';

type EmbeddingInput = { kind: 'text'; text: string } | { kind: 'tokens'; tokens: number[] };

export async function serviceTestEmbeddings(ctx: Context, resolved: ResolvedModel, body: JsonObject): Promise<void> {
  for (const key of Object.keys(body)) if (!KNOWN_PARAMS.has(key)) throw unknownParam(key);
  const inputs = parseInput(body.input);
  const encoding = parseEncodingFormat(body.encoding_format);
  const dimensions = parseDimensions(body.dimensions);
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string') throw invalidType('user', 'a string');

  const tally = new TokenTally();
  const counts = inputs.map((input) => (input.kind === 'text' ? tally.count(input.text) : input.tokens.length));
  counts.forEach((count, index) => {
    if (count > MAX_TOKENS_PER_INPUT) {
      const which = inputs.length > 1 ? `Input ${index} has` : 'The input has';
      throw invalidRequest(`${which} ${count} tokens; this model's maximum context length is ${MAX_TOKENS_PER_INPUT} tokens.`, 'input', 'context_length_exceeded');
    }
  });
  const total = counts.reduce((a, b) => a + b, 0);
  if (total > MAX_TOKENS_PER_REQUEST) {
    throw invalidRequest(`The inputs total ${total} tokens; one request may carry at most ${MAX_TOKENS_PER_REQUEST}. Split them over several requests.`, 'input', 'max_tokens_per_request');
  }

  exchangeOf(ctx).usage = { inputTokens: total, outputTokens: 0 };
  ctx.body = {
    object: 'list',
    data: inputs.map((input, index) => {
      const vector = embedFeatures(input.kind === 'text' ? textFeatures(input.text) : tokenFeatures(input.tokens), dimensions);
      return { object: 'embedding', index, embedding: encoding === 'base64' ? toBase64(vector) : Array.from(vector) };
    }),
    model: resolved.id,
    usage: { prompt_tokens: total, total_tokens: total },
  };
}

function parseInput(value: unknown): EmbeddingInput[] {
  if (value === undefined || value === null) throw missingParam('input');
  if (typeof value === 'string') {
    if (value === '') throw invalidValue('input', "'input' must not be an empty string.");
    return [{ kind: 'text', text: value }];
  }
  if (!Array.isArray(value)) throw invalidType('input', INPUT_SHAPES);
  if (value.length === 0) throw invalidValue('input', "'input' must not be an empty array.");
  // One array of integers is a single input of token ids; its length is bounded by tokens, not inputs.
  if (value.every(isTokenId)) return [{ kind: 'tokens', tokens: value }];
  if (value.length > MAX_INPUTS) throw invalidValue('input', `'input' has ${value.length} items; at most ${MAX_INPUTS} inputs fit in one request.`);
  if (value.every((item) => typeof item === 'string')) {
    const empty = value.indexOf('');
    if (empty !== -1) throw invalidValue('input', `'input[${empty}]' must not be an empty string.`);
    return value.map((text: string) => ({ kind: 'text', text }));
  }
  if (value.every((item) => Array.isArray(item) && item.every(isTokenId))) {
    const empty = value.findIndex((item: number[]) => item.length === 0);
    if (empty !== -1) throw invalidValue('input', `'input[${empty}]' must not be an empty token array.`);
    return value.map((tokens: number[]) => ({ kind: 'tokens', tokens }));
  }
  throw invalidType('input', `${INPUT_SHAPES}, with every item of the same kind`);
}

function isTokenId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function parseEncodingFormat(value: unknown): 'float' | 'base64' {
  if (value === undefined || value === null) return 'float';
  if (value === 'float' || value === 'base64') return value;
  throw invalidValue('encoding_format', `Invalid value for 'encoding_format': ${String(JSON.stringify(value)).slice(0, 100)}. Supported values are: 'float' and 'base64'.`);
}

function parseDimensions(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_DIMENSIONS;
  if (!Number.isInteger(value)) throw invalidType('dimensions', 'an integer');
  const dimensions = value as number;
  if (dimensions < 1 || dimensions > MAX_DIMENSIONS) throw invalidValue('dimensions', `Invalid value for 'dimensions': ${dimensions}. It must be from 1 to ${MAX_DIMENSIONS}.`);
  return dimensions;
}
