// How many tokens to reserve before a request runs. Like OpenAI's own rate limiter, the input is
// estimated from its character count (about four characters a token) rather than tokenised: the
// estimate only has to be close, because every request is settled to the actual usage afterwards,
// and tokenising every prompt would cost more CPU than the rest of the request.
import { DeferredJson } from '../http/deferred-json.ts';

/** A parsed JSON request body (http/body.ts's JsonObject; not imported, to keep limits/ free of the edge). */
type JsonObject = Record<string, unknown>;

/** A Data URL (image, audio) counts as one image: OpenAI's price of a high-detail 512 px tile set. */
const TOKENS_PER_ATTACHMENT = 765;
const CHARS_PER_TOKEN = 4;
/** OpenAI's chat framing: a few tokens around every message, and the priming of the reply. */
const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING = 3;

export interface TokenEstimate {
  input: number;
  output: number;
  /** The parameter that set `output`, named in errors when the reservation cannot fit. */
  outputParam: string | null;
  /** Answers requested (chat's `n`): `output` covers all of them. */
  choices: number;
  /** The smallest output limit the endpoint accepts (Responses wants at least 16). */
  minOutput: number;
}

export type TokenEndpoint = 'chat' | 'responses' | 'completions' | 'embeddings';

/**
 * `defaultOutput` is reserved when the request sets no output limit; settlement charges the rest
 * (or refunds) once the real usage is known.
 */
export function estimateTokens(body: JsonObject, endpoint: TokenEndpoint, defaultOutput: number): TokenEstimate {
  const input = estimateInput(endpoint === 'embeddings' ? body.input : body) + (endpoint === 'embeddings' ? 0 : REPLY_PRIMING);
  if (endpoint === 'embeddings') return { input, output: 0, outputParam: null, choices: 1, minOutput: 0 };
  const [param, value] = outputLimit(body, endpoint);
  const choices = endpoint === 'responses' ? 1 : positiveInt(body.n) ?? 1;
  const output = (value ?? defaultOutput) * choices;
  return { input, output, outputParam: value === undefined ? null : param, choices, minOutput: endpoint === 'responses' ? 16 : 1 };
}

function outputLimit(body: JsonObject, endpoint: TokenEndpoint): [string, number | undefined] {
  if (endpoint === 'responses') return ['max_output_tokens', positiveInt(body.max_output_tokens)];
  const completionTokens = positiveInt(body.max_completion_tokens);
  if (completionTokens !== undefined) return ['max_completion_tokens', completionTokens];
  return ['max_tokens', positiveInt(body.max_tokens)];
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * Walks the JSON once: text counts by length, attachments by a flat price, token ids one each. A
 * member left in the parser worker counts what the worker estimated for it, by this same walk.
 */
export function estimateInput(value: unknown): number {
  let chars = 0;
  let tokens = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.startsWith('data:')) tokens += TOKENS_PER_ATTACHMENT;
      else chars += item.length;
    } else if (typeof item === 'number') tokens += 1;
    else if (Array.isArray(item)) for (const element of item) stack.push(element);
    else if (item && typeof item === 'object') {
      if (item instanceof DeferredJson) {
        tokens += item.estimatedTokens;
        continue;
      }
      if ('role' in item) tokens += TOKENS_PER_MESSAGE;
      for (const element of Object.values(item)) stack.push(element);
    }
  }
  return tokens + Math.ceil(chars / CHARS_PER_TOKEN);
}
