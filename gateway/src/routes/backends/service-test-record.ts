// What a service-test chat or completions answer leaves on its exchange, shared by both backends:
// usage, finish reasons and the answered model (for metrics and spans), and the answer itself when
// message contents are captured.
import type { Context } from 'koa';
import { factsOfObject, noteFacts } from '../../upstream/answer-facts.ts';
import { exchangeOf } from '../model-access.ts';

interface ChatStyleAnswer extends Record<string, unknown> {
  usage: { prompt_tokens: number; completion_tokens: number };
}

/** Records a whole (non-stream) answer on the exchange; the caller sends it. */
export function recordWholeAnswer(ctx: Context, answer: ChatStyleAnswer): void {
  const exchange = exchangeOf(ctx);
  exchange.usage = { inputTokens: answer.usage.prompt_tokens, outputTokens: answer.usage.completion_tokens };
  noteFacts(exchange, factsOfObject(answer, 'chat'));
  if (exchange.content) exchange.content.output = answer;
}

/** For a stream: the captured contents (the same answer, built whole: it is deterministic) and the finish-reason reporter. */
export function streamRecorder(ctx: Context, wholeAnswer: () => unknown): (index: number, reason: string, stopSequence?: string | null) => void {
  const exchange = exchangeOf(ctx);
  if (exchange.content) exchange.content.output = wholeAnswer();
  return (index, reason, stopSequence = null) => noteFacts(exchange, { finishReasons: [{ index, reason }], stopSequence: stopSequence === null ? null : { sequence: stopSequence } });
}

/** The stop sequence a whole answer was cut at (exchange.stopSequence, for the Messages API): OpenAI's answer has no place for it. */
export function stopSequenceRecorder(ctx: Context): (sequence: string) => void {
  const exchange = exchangeOf(ctx);
  return (sequence) => noteFacts(exchange, { stopSequence: { sequence } });
}
