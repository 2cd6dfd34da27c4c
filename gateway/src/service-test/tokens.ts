// Token counts for service-test's `usage`, with the o200k_base encoding of OpenAI's current models
// (gpt-tokenizer, pure JS). Loaded lazily: the rank table costs memory and start-up time that a
// gateway serving only upstream models should not pay.
import { createRequire } from 'node:module';

interface Encoding {
  encode(text: string): number[];
  decode(tokens: number[]): string;
  countTokens(text: string): number;
}

let encoding: Encoding | null = null;
function load(): Encoding {
  encoding ??= createRequire(import.meta.url)('gpt-tokenizer/cjs/encoding/o200k_base') as Encoding;
  return encoding;
}

export function countTokens(text: string): number {
  return text === '' ? 0 : load().countTokens(text);
}

export function encodeTokens(text: string): number[] {
  return load().encode(text);
}

export function decodeTokens(tokens: number[]): string {
  return load().decode(tokens);
}

/** The first `max` tokens of `text`, as text; used when max_tokens cuts an answer short. */
export function truncateToTokens(text: string, max: number): { text: string; tokens: number; truncated: boolean } {
  const tokens = load().encode(text);
  if (tokens.length <= max) return { text, tokens: tokens.length, truncated: false };
  return { text: load().decode(tokens.slice(0, max)), tokens: max, truncated: true };
}

/**
 * Prompt tokens of a chat conversation, counted as OpenAI documents for its chat format: each
 * message costs its content plus 3 tokens of framing (4 with a name), and every reply is primed
 * with 3 more. Images are counted as a low-detail image (85 tokens) each; this is an approximation.
 */
export const MESSAGE_OVERHEAD = 3;
export const REPLY_PRIMING = 3;
export const IMAGE_TOKENS = 85;
