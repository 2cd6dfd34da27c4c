// A translated stream's first content, awaited before the client's response is committed. Providers
// report some failures inside a 200 stream (Anthropic's `overloaded_error` event right after
// message_start, Bedrock's throttling exception frame): while nothing but the stream's opening (the
// role chunk, keep-alives) has come, such a failure is the attempt failing, and the fallback may still
// try the next target, since the client has seen nothing. So the answer is read through its
// translator until the first frame that carries content (text, reasoning, a tool call, a finish), a
// failure, or the end of the hold, whichever comes first; what was translated meanwhile is kept for
// the relay, which writes it first and goes on from there with the same translator.
import type { Readable } from 'node:stream';
import { sinceAttempt, type UpstreamAttempt } from '../exchange/exchange.ts';
import { ApiError } from '../http/errors.ts';
import { ProviderStreamError, type ChatStreamTranslator, type TranslatedError } from '../providers/provider.ts';
import { translatedError } from './translated-error.ts';
import { noTargetLeft, scrub, upstreamAuthFailed, upstreamTimeout } from './upstream-error.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';

/** The longest the client's response is held for a stream's first content, whatever the upstream's first-byte timeout. */
export const MAX_HOLD_MS = 10_000;

/** A stream whose first content came: its translator, and what it translated so far, for the relay to write first. */
export interface HeldStream {
  translator: ChatStreamTranslator;
  held: string;
  /** The provider's stream ended within the hold: `held` is all of it. */
  ended: boolean;
}

/** An answer that failed before its content: how the fallback treats the attempt. */
export interface Rejection {
  /** What the client gets when no later target answers (at once when not `retry`). */
  error: ApiError;
  /** The attempt's recorded error. */
  code: string;
  /** The next target may do better: an overload, a rate limit, a timeout, a broken stream. */
  retry: boolean;
  /** The breaker's verdict on the upstream: false a failure, true a success (the client's own error), null none (the gateway's credential). */
  healthy: boolean | null;
}

export type FirstContent =
  /** Content came, or the hold ran out with none (`held` is then the opening alone); the body continues, paused. */
  | { kind: 'content'; held: string; ended: false }
  /** The whole stream came within the hold: `held` is all of it, its end included. */
  | { kind: 'content'; held: string; ended: true }
  /** The stream failed (the translator threw, the body broke or timed out) before any content: the body is destroyed. */
  | { kind: 'failed'; error: Error };

export async function awaitFirstContent(body: Readable, translator: ChatStreamTranslator, holdMs: number, record: UpstreamAttempt): Promise<FirstContent> {
  let held = '';
  const watch: OpeningWatch = {
    feed(chunk) {
      const out = translator.feed(chunk);
      held += out;
      return carriesContent(out);
    },
    end() {
      held += translator.end();
    },
  };
  const first = await holdUntilContent(body, watch, holdMs, record);
  return first.kind === 'failed' ? first : ({ kind: 'content', held, ended: first.ended } as FirstContent);
}

/** How a hold reads a stream's opening: whether a read brought content (the client's stream must start), or a throw when it failed. */
export interface OpeningWatch {
  /** True when the read carries content, or when holding any more would cost more than it is worth. Throws on a failure. */
  feed(chunk: Buffer): boolean;
  /** The body ended within the hold. Throws when it ended without the provider's terminal event. */
  end(): void;
}

export type HoldOutcome = { kind: 'content'; ended: boolean } | { kind: 'failed'; error: Error };

/**
 * Reads `body` through `watch` until it reports content, fails, ends, or `holdMs` runs out. On
 * content or time the body is left paused for the relay; on a failure it is destroyed.
 */
export function holdUntilContent(body: Readable, watch: OpeningWatch, holdMs: number, record: UpstreamAttempt): Promise<HoldOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const timer = setTimeout(() => commit(false), holdMs);
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      body.removeListener('data', onData);
    };
    const commit = (ended: boolean) => {
      if (settled) return;
      settle();
      // Paused: the relay takes the body from here, resuming it when it has its own listeners.
      if (!ended) body.pause();
      resolve({ kind: 'content', ended });
    };
    const fail = (error: Error) => {
      if (settled) return;
      settle();
      body.destroy();
      resolve({ kind: 'failed', error });
    };
    const onData = (chunk: Buffer) => {
      if (record.firstByteMs === null) record.firstByteMs = sinceAttempt(record);
      let content: boolean;
      try {
        content = watch.feed(chunk);
      } catch (error) {
        return fail(error as Error);
      }
      if (content) commit(false);
    };
    body.on('data', onData);
    body.once('end', () => {
      if (settled) return;
      try {
        watch.end();
      } catch (error) {
        return fail(error as Error);
      }
      commit(true);
    });
    // Stays after the hold (a no-op then): the relay adds its own, and an error in between must not go unheard.
    body.on('error', fail);
  });
}

/**
 * Whether translated SSE text has a frame the client must not lose to a fallback: any delta beyond
 * the role (text, reasoning, tool calls, a refusal), a finish reason, a usage chunk, or [DONE].
 * The role chunk and `: ping` comments are the stream's opening, not its content.
 */
export function carriesContent(out: string): boolean {
  if (out === '') return false;
  for (const frame of out.split('\n\n')) {
    if (!frame.startsWith('data: ')) continue;
    const data = frame.slice(6);
    if (data === '[DONE]') return true;
    let chunk: { choices?: Array<{ delta?: Record<string, unknown>; finish_reason?: unknown }>; usage?: unknown };
    try {
      chunk = JSON.parse(data);
    } catch {
      return true;
    }
    if (chunk.usage) return true;
    for (const choice of chunk.choices ?? []) {
      if (choice.finish_reason != null) return true;
      for (const [name, value] of Object.entries(choice.delta ?? {})) if (name !== 'role' && value !== '' && value != null) return true;
    }
  }
  return false;
}

/** A stream's failure before its content, as the fallback weighs it; messages scrubbed of `secrets`. */
export function rejectionOf(error: Error, upstream: string, subject: string, secrets: ReadonlyArray<string | null>): Rejection {
  const clean = (text: string) => secrets.reduce((out: string, secret) => scrub(out, secret), text);
  if (error instanceof ProviderStreamError) {
    if (error.code === 'upstream_auth_failed') return { error: upstreamAuthFailed(upstream), code: 'upstream_auth_failed', retry: false, healthy: null };
    const message = clean(error.message);
    if (error.type === 'invalid_request_error') {
      return { error: new ApiError(400, error.code, message, { type: 'invalid_request_error' }), code: error.code, retry: false, healthy: true };
    }
    const limited = error.type === 'rate_limit_error';
    const unavailable = OVERLOADED.has(error.code);
    const status = limited ? 429 : unavailable ? 503 : 502;
    const retryAfter = unavailable ? '1' : undefined;
    return { error: translatedError({ status, message, type: error.type as TranslatedError['type'], code: error.code, param: null, retryAfter }, null), code: error.code, retry: true, healthy: false };
  }
  const timeout = bodyTimeoutOf(error);
  if (timeout) return { error: upstreamTimeout(subject), code: timeout, retry: true, healthy: false };
  const code = (error as { code?: string }).code ?? 'upstream_stream_error';
  return { error: noTargetLeft(subject, 1, `last error: ${code} from '${upstream}'`), code, retry: true, healthy: false };
}

/** Stream failure codes that mean "busy, try elsewhere or later": 503 with Retry-After, as the same error before the stream is. */
const OVERLOADED = new Set(['upstream_overloaded', 'upstream_unavailable', 'service_unavailable', 'model_not_ready']);
