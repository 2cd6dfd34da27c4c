// Token counts for service-test's `usage`, with the o200k_base encoding of OpenAI's current models
// (gpt-tokenizer, pure JS). Loaded at start-up (server.ts): loading the rank table blocks for a few
// hundred milliseconds, which the first service-test request must not impose on every other request.
import { createRequire } from 'node:module';

interface Encoding {
  encode(text: string): number[];
  decode(tokens: number[]): string;
  countTokens(text: string): number;
}

let encoding: Encoding | null = null;
export function loadTokenizer(): void {
  load();
}

function load(): Encoding {
  encoding ??= createRequire(import.meta.url)('gpt-tokenizer/cjs/encoding/o200k_base') as Encoding;
  return encoding;
}

/**
 * Byte-pair encoding costs grow with the square of a run of text that has no break in it (160,000
 * `a` took seconds), and a request may carry 50 MB. So text is tokenised in pieces of bounded length,
 * cut where a word starts when there is one nearby (which leaves ordinary prose counted exactly), and
 * one request tokenises a bounded number of characters exactly: past it, the count is extrapolated
 * from evenly spread samples of the same text. The work per request is bounded whatever its input,
 * and the figure stays deterministic: the same input always gets the same count.
 */
const PIECE_CHARS = 256;
/** How far back from a piece's end a word start is looked for before cutting the run. */
const WORD_SEARCH_CHARS = 64;
/** Characters tokenised exactly per request (random CJK text, the slowest seen, costs ~3 µs a char). */
export const EXACT_CHARS_PER_REQUEST = 12 * 1024;
const SAMPLE_WINDOWS = 8;
/** OpenAI's rule of thumb, used only when nothing of the request could be tokenised exactly. */
const DEFAULT_CHARS_PER_TOKEN = 4;

const isSpace = (code: number) => code === 32 || (code >= 9 && code <= 13) || code === 0xa0;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** Where to end a piece that starts at `start` and may run to `limit`: a word start, else `limit` (never inside a surrogate pair). */
function pieceEnd(text: string, start: number, limit: number): number {
  if (limit >= text.length) return text.length;
  for (let i = limit; i > start + 1 && i > limit - WORD_SEARCH_CHARS; i--) {
    if (isSpace(text.charCodeAt(i - 1)) && !isSpace(text.charCodeAt(i))) return i;
  }
  return isLowSurrogate(text.charCodeAt(limit)) ? limit - 1 : limit;
}

/** Tokens of `text`, tokenised piece by piece: linear in its length. */
function countInPieces(text: string): number {
  const encoding = load();
  let tokens = 0;
  for (let start = 0; start < text.length; ) {
    const end = pieceEnd(text, start, start + PIECE_CHARS);
    tokens += encoding.countTokens(text.slice(start, end));
    start = end;
  }
  return tokens;
}

/**
 * Counts the tokens of one request's texts with a bounded amount of exact tokenisation. Create one
 * per request and count every text of it through it.
 */
export class TokenTally {
  private exactLeft: number;
  private exactChars = 0;
  private exactTokens = 0;

  constructor(exactChars = EXACT_CHARS_PER_REQUEST) {
    this.exactLeft = exactChars;
  }

  count(text: string): number {
    if (text === '') return 0;
    if (text.length <= this.exactLeft) return this.exact(text);
    const length = text.length;
    if (this.exactLeft >= SAMPLE_WINDOWS * 16) {
      // Windows spread evenly over the text, so that a long prompt of mixed content is sampled whole.
      const window = Math.floor(this.exactLeft / SAMPLE_WINDOWS);
      const stride = Math.floor(length / SAMPLE_WINDOWS);
      let sampleChars = 0;
      let sampleTokens = 0;
      for (let i = 0; i < SAMPLE_WINDOWS; i++) {
        let from = i * stride;
        if (isLowSurrogate(text.charCodeAt(from))) from++;
        const sample = text.slice(from, pieceEnd(text, from, from + window));
        sampleChars += sample.length;
        sampleTokens += this.exact(sample);
      }
      return Math.max(1, Math.round((sampleTokens * length) / Math.max(1, sampleChars)));
    }
    const ratio = this.exactChars > 0 ? this.exactTokens / this.exactChars : 1 / DEFAULT_CHARS_PER_TOKEN;
    return Math.max(1, Math.round(length * ratio));
  }

  private exact(text: string): number {
    const tokens = countInPieces(text);
    this.exactLeft -= text.length;
    this.exactChars += text.length;
    this.exactTokens += tokens;
    return tokens;
  }
}

/** Tokens of one text, with its own exact-tokenisation budget (for texts that are not part of a larger request). */
export function countTokens(text: string): number {
  return text === '' ? 0 : new TokenTally().count(text);
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
