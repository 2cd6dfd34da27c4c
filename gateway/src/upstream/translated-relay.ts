// Relays the answer of a provider that does not speak the OpenAI API, translated as it comes: a
// stream through the provider's stream translator (one client write per upstream read, with the
// event-stream writer's backpressure, timeouts and in-band errors), a whole answer parsed and turned
// into OpenAI's object. Usage in OpenAI's meaning and the finish reason go on the exchange, for
// limits, metrics and spans, as the pass-through relay does for OpenAI answers. A stream is first
// vetted in the fallback (`firstContentVet`): held until its first content, so that a failure the
// provider reports before any (Anthropic's overloaded event after a 200) can still fall back.
import { ApiError } from '../http/errors.ts';
import type { Exchange } from '../exchange/exchange.ts';
import type { AnswerContext, OpenAIBody, OpenAIUsage, ProviderModule } from '../providers/provider.ts';
import { keepStreamed } from '../telemetry/content-capture.ts';
import { noteFacts } from './answer-facts.ts';
import { writeEventStream } from './event-stream.ts';
import type { Answer, VetAnswer } from './fallback.ts';
import { awaitFirstContent, MAX_HOLD_MS, rejectionOf } from './first-content.ts';
import { moduleOf, type ProviderRegistry } from '../providers/registry.ts';
import { settingsOf } from './settings.ts';
import { readText } from './relay.ts';
import type { ResponseSink } from './sink.ts';
import { usageFromChat, type SseRelay } from './sse-relay.ts';
import { scrub, upstreamTimeout } from './upstream-error.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';

export interface TranslatedRelayOptions {
  /** The model name the client asked for. */
  publicModel: string;
  operation: 'chat' | 'embeddings';
  /** The client's request body (embeddings read `encoding_format` and `dimensions` from it). */
  body: OpenAIBody;
  /** The client asked for the stream's usage chunk. */
  includeUsage: boolean;
}

const MAX_JSON_ANSWER = 64 * 1024 * 1024;

/**
 * The fallback's vet of a translated chat stream: the answer read through its translator until its
 * first content, at most the upstream's first-byte timeout (and MAX_HOLD_MS) after its head, so that
 * the client's time to first byte stays bounded by what the operator set. A failure before then
 * rejects the attempt; `subject` names the model in errors.
 */
export function firstContentVet(exchange: Exchange, providers: ProviderRegistry, options: TranslatedRelayOptions, subject: string): VetAnswer {
  return async (answer) => {
    const module = moduleOf(providers, answer.attempt.upstream);
    if (!module) return null;
    const translator = module.translation.chatStream(answerContext(exchange, answer, options));
    const holdMs = Math.min(settingsOf(answer.attempt.upstream).firstByteMs, MAX_HOLD_MS);
    const first = await awaitFirstContent(answer.response.body, translator, holdMs, answer.record);
    if (first.kind === 'content') {
      answer.held = { translator, held: first.held, ended: first.ended };
      return null;
    }
    return rejectionOf(first.error, answer.attempt.upstream.metadata.name, subject, [answer.secret, ...answer.secrets]);
  };
}

function answerContext(exchange: Exchange, answer: Answer, options: TranslatedRelayOptions): AnswerContext {
  return {
    publicModel: options.publicModel,
    providerModel: answer.attempt.upstreamModel ?? options.publicModel,
    requestId: exchange.id,
    created: Math.floor(Date.now() / 1000),
    includeUsage: options.includeUsage,
    responseHeaders: answer.response.headers,
  };
}

export async function relayTranslated(exchange: Exchange, sink: ResponseSink, answer: Answer, module: ProviderModule, options: TranslatedRelayOptions): Promise<void> {
  const { response, attempt, record } = answer;
  const providerModel = attempt.upstreamModel ?? options.publicModel;
  const context = answerContext(exchange, answer, options);
  const translation = module.translation;
  exchange.modelAnswered = providerModel;

  if (options.operation === 'chat' && options.body.stream === true) {
    sink.status(200);
    sink.header('Cache-Control', 'no-cache');
    sink.header('X-Accel-Buffering', 'no');
    sink.type('text/event-stream');
    exchange.stream = true;
    const stream = answer.held ?? { translator: translation.chatStream(context), held: '', ended: false };
    const translator = stream.translator;
    const content = exchange.content;
    const report = (out: string): string | null => {
      noteUsage(exchange, translator.usage());
      const reason = translator.finishReason();
      if (reason) noteFacts(exchange, { finishReasons: [{ index: 0, reason }], stopSequence: translator.stopSequence?.() });
      if (content && out) for (const line of out.split('\n')) if (line.startsWith('data: {')) keepStreamed(content, line.slice(6));
      return out === '' ? null : out;
    };
    const relay: SseRelay = {
      feed: (chunk) => report(translator.feed(chunk)),
      end: () => report(translator.end()),
      // The translator emits whole frames only: nothing is half-written when the upstream breaks off.
      cut: () => null,
    };
    writeEventStream(sink.takeOver(), exchange, record, response.body, relay, { out: report(stream.held), ended: stream.ended });
    return;
  }

  let parsed: unknown;
  try {
    const text = await readText(response.body, MAX_JSON_ANSWER);
    parsed = JSON.parse(text);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (bodyTimeoutOf(error) || exchange.abortReason === 'timeout') throw upstreamTimeout(`'${attempt.upstream.metadata.name}'`);
    if (exchange.aborted) throw error;
    throw new ApiError(502, 'upstream_invalid_response', `The upstream provider '${attempt.upstream.metadata.name}' sent an answer that is not the JSON it should be.`);
  }
  let object: Record<string, unknown> & { usage?: OpenAIUsage };
  if (options.operation === 'embeddings') {
    if (!translation.embeddings) throw new Error(`provider '${translation.name}' has no embeddings`);
    object = translation.embeddings.response(Array.isArray(parsed) ? parsed : [parsed], options.body, context);
  } else {
    object = translation.chatResponse(parsed, context);
    const reason = (object.choices as Array<{ finish_reason?: unknown }> | undefined)?.[0]?.finish_reason;
    if (typeof reason === 'string') noteFacts(exchange, { finishReasons: [{ index: 0, reason }], stopSequence: translation.chatStopSequence?.(parsed) });
  }
  noteUsage(exchange, object.usage ?? null);
  if (exchange.content) exchange.content.output = object;
  sink.status(200);
  sink.type('application/json');
  let text = scrub(JSON.stringify(object), answer.secret);
  for (const secret of answer.secrets) text = scrub(text, secret);
  sink.send(Buffer.from(text));
}

/** The translated usage, read as an OpenAI answer's is (cached and reasoning tokens are priced as such). */
function noteUsage(exchange: Exchange, usage: OpenAIUsage | null): void {
  // Embeddings' usage has no completion_tokens: none were made (usageFromChat counts them 0).
  const read = usage ? usageFromChat(usage) : null;
  if (read) exchange.usage = read;
}
