// service-test's legacy Completions (POST /v1/completions): served rather than refused, so that
// clients built on it (the AI SDK's openai.completion, LangChain's OpenAI class, Python's
// completions.create) can check their integration for free. Behaves like an instruct model:
// each prompt gets the engine's description of it as text, max_tokens defaults to 16 as at
// OpenAI, `echo` prepends the prompt, `suffix` is appended, usage counts raw tokens (no chat framing).
import { randomId } from './random-ids.ts';
import type { JsonObject } from '../http/body.ts';
import { invalidType, invalidValue, missingParam } from '../http/errors.ts';
import { optionalBoolean, optionalNumber, optionalObject, optionalString, rejectUnknown } from '../http/params.ts';
import type { SseStream } from '../http/sse.ts';
import { answerConversation } from './answer.ts';
import { parseStop, parseStreamAndSampling } from './chat-request.ts';
import { fragments } from './chat-completion.ts';
import { TokenTally, decodeTokens, encodeTokens, truncateToTokens } from './tokens.ts';

const KNOWN = new Set([
  'model', 'prompt', 'best_of', 'echo', 'frequency_penalty', 'logit_bias', 'logprobs', 'max_tokens', 'n', 'presence_penalty',
  'seed', 'stop', 'stream', 'stream_options', 'suffix', 'temperature', 'top_p', 'user',
]);
/** OpenAI's default for this endpoint, which surprises people used to chat. */
const DEFAULT_MAX_TOKENS = 16;
const MAX_PROMPTS = 64;

export interface CompletionRequest {
  prompts: string[];
  n: number;
  maxTokens: number;
  stop: string[];
  echo: boolean;
  suffix: string;
  logprobs: number | null;
  stream: boolean;
  includeUsage: boolean;
}

interface CompletionChoice {
  text: string;
  finishReason: 'stop' | 'length';
  tokens: number;
}

export function parseCompletionRequest(body: JsonObject): CompletionRequest {
  rejectUnknown(body, KNOWN);
  const prompts = parsePrompt(body.prompt);
  const { stream, includeUsage } = parseStreamAndSampling(body);
  optionalString(body, 'user');
  const n = optionalNumber(body, 'n', { min: 1, max: 128, integer: true }) ?? 1;
  const bestOf = optionalNumber(body, 'best_of', { min: 1, max: 20, integer: true });
  if (bestOf !== undefined && bestOf < n) throw invalidValue('best_of', "Invalid 'best_of': must be at least 'n'.");
  if (bestOf !== undefined && bestOf > 1 && stream) throw invalidValue('best_of', "'best_of' cannot be used with 'stream'.");
  return {
    prompts,
    n,
    maxTokens: optionalNumber(body, 'max_tokens', { min: 0, integer: true }) ?? DEFAULT_MAX_TOKENS,
    stop: parseStop(body.stop),
    echo: optionalBoolean(body, 'echo') ?? false,
    suffix: optionalString(body, 'suffix') ?? '',
    logprobs: optionalNumber(body, 'logprobs', { min: 0, max: 5, integer: true }) ?? null,
    stream,
    includeUsage,
  };
}

/** A string, an array of strings, an array of token ids, or an array of such arrays. */
function parsePrompt(value: unknown): string[] {
  if (value === undefined || value === null) throw missingParam('prompt');
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value) || value.length === 0) throw invalidType('prompt', 'a string, an array of strings, or an array of token arrays');
  if (value.length > MAX_PROMPTS) throw invalidValue('prompt', `Invalid 'prompt': at most ${MAX_PROMPTS} prompts per request.`);
  if (value.every((v) => typeof v === 'number')) return [tokensToText(value, 'prompt')];
  return value.map((entry, i) => {
    if (typeof entry === 'string') return entry;
    if (Array.isArray(entry)) return tokensToText(entry, `prompt[${i}]`);
    throw invalidType(`prompt[${i}]`, 'a string or an array of token ids');
  });
}

function tokensToText(tokens: unknown[], param: string): string {
  if (!tokens.every((t) => typeof t === 'number' && Number.isInteger(t) && t >= 0 && t < 200_000)) throw invalidValue(param, `Invalid '${param}': token ids are integers of the o200k_base vocabulary.`);
  return decodeTokens(tokens as number[]);
}

function complete(request: CompletionRequest, prompt: string): CompletionChoice {
  const answer = answerConversation({ turns: [{ role: 'user', text: prompt, images: [] }], tools: [], toolChoice: 'none', parallelToolCalls: false, format: { type: 'text' } });
  let text = answer.kind === 'text' ? ` ${answer.text}` : '';
  for (const stop of request.stop) {
    const at = text.indexOf(stop);
    if (at !== -1) text = text.slice(0, at);
  }
  const cut = truncateToTokens(text, request.maxTokens);
  return { text: cut.text, finishReason: cut.truncated ? 'length' : 'stop', tokens: cut.tokens };
}

function logprobsOf(text: string, offset: number) {
  const tokens = encodeTokens(text).map((t) => decodeTokens([t]));
  const textOffset: number[] = [];
  let at = offset;
  for (const token of tokens) {
    textOffset.push(at);
    at += token.length;
  }
  return { tokens, token_logprobs: tokens.map(() => 0), top_logprobs: tokens.map((token) => ({ [token]: 0 })), text_offset: textOffset };
}

function usageOf(request: CompletionRequest, choices: CompletionChoice[]) {
  // One tally for all the prompts: the request's exact tokenising stays bounded however many it sends.
  const tally = new TokenTally();
  const promptTokens = request.prompts.reduce((sum, p) => sum + tally.count(p), 0);
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens, 0) * request.n;
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

function completionId(): string {
  return randomId('cmpl-', 15);
}

export function textCompletion(request: CompletionRequest, model: string) {
  const answers = request.prompts.map((prompt) => complete(request, prompt));
  const choices = answers.flatMap((answer, p) =>
    Array.from({ length: request.n }, (_, j) => {
      const prefix = request.echo ? request.prompts[p] : '';
      const text = `${prefix}${answer.text}${answer.finishReason === 'stop' ? request.suffix : ''}`;
      return { text, index: p * request.n + j, logprobs: request.logprobs === null ? null : logprobsOf(text, 0), finish_reason: answer.finishReason };
    }),
  );
  return { id: completionId(), object: 'text_completion' as const, created: Math.floor(Date.now() / 1000), model, choices, usage: usageOf(request, answers), system_fingerprint: 'fp_service_test' };
}

/** Streams each choice in word-sized pieces, then finish reasons, then (if asked) usage, then [DONE]. */
export async function streamTextCompletion(
  sse: SseStream,
  request: CompletionRequest,
  model: string,
  reportUsage: (usage: { inputTokens: number; outputTokens: number }) => void,
  /** Told each choice's finish reason once its last chunk has been sent (telemetry). */
  reportFinish: (index: number, reason: string) => void = () => {},
): Promise<void> {
  const answers = request.prompts.map((prompt) => complete(request, prompt));
  const usage = usageOf(request, answers);
  reportUsage({ inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens });
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  const chunk = (index: number, text: string, finishReason: string | null) => ({
    id, object: 'text_completion', created, model, system_fingerprint: 'fp_service_test',
    choices: [{ text, index, logprobs: request.logprobs === null ? null : logprobsOf(text, 0), finish_reason: finishReason }],
  });
  for (const [p, answer] of answers.entries()) {
    for (let j = 0; j < request.n; j++) {
      const index = p * request.n + j;
      const pieces = [...(request.echo ? [request.prompts[p]] : []), ...fragments(answer.text), ...(answer.finishReason === 'stop' && request.suffix ? [request.suffix] : [])];
      for (const piece of pieces) {
        if (!sse.open) return;
        await sse.send(chunk(index, piece, null));
      }
      await sse.send(chunk(index, '', answer.finishReason));
      reportFinish(index, answer.finishReason);
    }
  }
  if (request.includeUsage) await sse.send({ id, object: 'text_completion', created, model, choices: [], usage });
  await sse.send('[DONE]');
  sse.end();
}
