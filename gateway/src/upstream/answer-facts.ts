// What telemetry wants from an answer besides its usage: the model the upstream says answered
// (`model`) and why each choice stopped (`finish_reason`; a Responses object's status). Read from what
// the relay already holds — a parsed object or event, or the bytes of a large JSON answer searched in
// a bounded window — never by parsing an answer a second time.
import type { Exchange, StopSequenceHit } from '../exchange/exchange.ts';

/** Facts the relay reports as it finds them; each call may carry either or both. */
export interface AnswerFacts {
  model?: string;
  /** Per choice index; a Responses answer has one. */
  finishReasons?: Array<{ index: number; reason: string }>;
  /** The answer stopped on a stop sequence (exchange.stopSequence). */
  stopSequence?: StopSequenceHit | null;
}

/** Choices whose finish reason is kept (n is at most 128 at OpenAI). */
const MAX_CHOICES = 128;

/** Records what an answer said on its exchange: the model as returned, and each choice's finish reason. */
export function noteFacts(exchange: Exchange, facts: AnswerFacts | null): void {
  if (!facts) return;
  if (facts.model) exchange.modelAnswered = facts.model;
  if (facts.stopSequence) exchange.stopSequence = { sequence: facts.stopSequence.sequence || null };
  if (!facts.finishReasons) return;
  const reasons = (exchange.finishReasons ??= []);
  for (const { index, reason } of facts.finishReasons) if (index >= 0 && index < MAX_CHOICES) reasons[index] = reason;
}

/** Longest value kept: finish reasons and model names are short identifiers. */
const MAX_VALUE = 128;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value.slice(0, MAX_VALUE) : undefined);

/**
 * The reason a Responses answer stopped, in the words chat uses where one applies: `stop` when it
 * completed, the incomplete reason (`max_output_tokens` is chat's `length`), else its status.
 */
export function responseFinishReason(response: Record<string, unknown>): string | undefined {
  const status = response.status;
  if (status === 'completed') return 'stop';
  if (status === 'incomplete') {
    const reason = (response.incomplete_details as Record<string, unknown> | null | undefined)?.reason;
    return reason === 'max_output_tokens' ? 'length' : (text(reason) ?? 'incomplete');
  }
  if (status === 'failed' || status === 'cancelled') return status;
  return undefined;
}

/** From a parsed answer (chat completion, legacy completion, Responses object) or one chat/completions chunk. */
export function factsOfObject(object: Record<string, unknown>, kind: 'chat' | 'responses' | 'other'): AnswerFacts | null {
  const facts: AnswerFacts = {};
  const model = text(object.model);
  if (model) facts.model = model;
  if (kind === 'responses' || object.object === 'response') {
    const reason = responseFinishReason(object);
    if (reason) facts.finishReasons = [{ index: 0, reason }];
  } else if (Array.isArray(object.choices)) {
    for (let i = 0; i < object.choices.length; i++) {
      const choice = object.choices[i] as Record<string, unknown> | null;
      const reason = text(choice?.finish_reason);
      if (!reason) continue;
      (facts.finishReasons ??= []).push({ index: typeof choice!.index === 'number' ? choice!.index : i, reason });
    }
  }
  return facts.model || facts.finishReasons ? facts : null;
}

/** A Responses stream event: the response object of created/completed/incomplete/failed events. */
export function factsOfResponseEvent(event: Record<string, unknown>): AnswerFacts | null {
  const response = event.response;
  if (!response || typeof response !== 'object') return null;
  return factsOfObject(response as Record<string, unknown>, 'responses');
}

const FINISH_KEY = Buffer.from('"finish_reason"');
const MODEL_KEY = Buffer.from('"model"');
/** How far into a large answer the top-level `model` is looked for, and how far back from its end finish reasons are. */
const HEAD_BYTES = 1024;
const TAIL_BYTES = 8192;

/**
 * From the bytes of a large JSON answer whose usage was read from its end (json-answer.ts): the
 * `model` near its start (chat, completions) or its end (embeddings), and the `finish_reason`
 * values in its last few KB (the last choices end just before `usage`). A raw `"` never occurs inside
 * a JSON string, so `"finish_reason"` followed by `:` is a key of the document; values are read only
 * when they are plain strings.
 */
export function scanAnswerBytes(bytes: Buffer, kind: 'chat' | 'responses' | 'other', tailModel: unknown): AnswerFacts | null {
  const facts: AnswerFacts = {};
  const model = text(tailModel) ?? stringAfter(bytes, bytes.subarray(0, HEAD_BYTES).indexOf(MODEL_KEY), HEAD_BYTES) ?? stringAfter(bytes, lastIndexIn(bytes, MODEL_KEY, TAIL_BYTES), bytes.length);
  if (model) facts.model = model;
  if (kind === 'chat') {
    const from = Math.max(0, bytes.length - TAIL_BYTES);
    const reasons: string[] = [];
    for (let at = bytes.indexOf(FINISH_KEY, from); at !== -1; at = bytes.indexOf(FINISH_KEY, at + FINISH_KEY.length)) {
      const reason = stringAfter(bytes, at, bytes.length);
      if (reason) reasons.push(reason);
    }
    if (reasons.length > 0) facts.finishReasons = reasons.map((reason, index) => ({ index, reason }));
  }
  return facts.model || facts.finishReasons ? facts : null;
}

function lastIndexIn(bytes: Buffer, needle: Buffer, window: number): number {
  const from = Math.max(0, bytes.length - window);
  const at = bytes.subarray(from).lastIndexOf(needle);
  return at === -1 ? -1 : from + at;
}

/** The string value of the key at `at` (`"key" : "value"`), when it starts before `limit`, is plain and short. */
function stringAfter(bytes: Buffer, at: number, limit: number): string | undefined {
  if (at === -1 || at >= limit) return undefined;
  let i = bytes.indexOf(0x22, at + 1) + 1; // past the key's closing quote
  if (i === 0) return undefined;
  while (i < bytes.length && isSpace(bytes[i])) i++;
  if (bytes[i] !== 0x3a) return undefined; // not a key
  i++;
  while (i < bytes.length && isSpace(bytes[i])) i++;
  if (bytes[i] !== 0x22) return undefined; // null, or not a string
  const start = i + 1;
  const end = bytes.indexOf(0x22, start);
  if (end === -1 || end - start > MAX_VALUE || end === start) return undefined;
  const value = bytes.toString('utf8', start, end);
  return value.includes('\\') ? undefined : value;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}
