// Fallback before the first byte (docs/adr/0004): the targets are tried in order until one answers
// with something worth relaying. Connection errors, timeouts, 429 and 5xx move on to the next target;
// nothing has reached the client yet, so it cannot tell. A 401/403 is the gateway's own credential
// refused (502, no fallback), another 4xx is the client's error, relayed. A 2xx may still be vetted
// before it is kept (`vet`: a translated stream is held until its first content, first-content.ts),
// and fail then as if it had answered an error. Every attempt is recorded on the exchange with its
// timings and outcome.
import type { Dispatcher } from 'undici';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import { sinceAttempt } from '../exchange/exchange.ts';
import type { ApiError } from '../http/errors.ts';
import type { Breakers } from './breaker.ts';
import { UpstreamAbort, type AttemptRequest, type CallUpstream, type UpstreamCall } from './call.ts';
import { readErrorText } from './error-body.ts';
import { settingsOf } from './settings.ts';
import { bodyTimeoutOf } from './with-timeouts.ts';
import type { Attempt } from './targets.ts';
import type { Outcome } from './call.ts';
import { moduleOf, type ProviderRegistry } from '../providers/registry.ts';
import { providerCredentialFailed, translatedError } from './translated-error.ts';
import type { HeldStream, Rejection } from './first-content.ts';
import { missingCredential, noTargetLeft, relayedClientError, scrub, upstreamAuthFailed, upstreamTimeout } from './upstream-error.ts';

/** The answer chosen for relaying. */
export interface Answer {
  response: Dispatcher.ResponseData;
  attempt: Attempt;
  secret: string | null;
  /** A translated provider's other secrets, scrubbed from what it answers as the credential is. */
  secrets: string[];
  record: UpstreamAttempt;
  aborts: UpstreamAbort;
  /** A translated stream read up to its first content by the vet: the relay goes on from there. */
  held?: HeldStream;
  /** A relayed stream's opening, read by the vet up to its first content (messages-hold.ts): written first, byte for byte. */
  heldBytes?: HeldBytes;
}

export interface HeldBytes {
  bytes: Buffer;
  /** The stream ended within the hold: `bytes` is all of it. */
  ended: boolean;
}

/**
 * Looks into a 2xx answer before it is kept: null keeps it, a Rejection fails the attempt (the next
 * target is tried when the rejection allows). The answer's body is the vet's until it says.
 */
export type VetAnswer = (answer: Answer) => Promise<Rejection | null>;

/** How much of an error answer is read: enough for any provider's message, never a whole page. */
const ERROR_BODY_BYTES = 64 * 1024;
const CLIENT_ERROR_BYTES = 1024 * 1024;
const TIMEOUT_ERRORS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/**
 * Tries `attempts` in order through `call` (the composed layers); returns the answer to relay, null
 * when the exchange was aborted, or throws the error the client should see. `subject` names what
 * was asked for in messages (`'gpt-4o'`).
 */
export async function firstAnswer(exchange: Exchange, call: CallUpstream, breakers: Breakers, attempts: Attempt[], request: AttemptRequest, headers: Record<string, string>, subject: string, providers: ProviderRegistry = {}, vet?: VetAnswer): Promise<Answer | null> {
  const aborts = new UpstreamAbort(exchange);
  let lastFailure: ApiError | null = null;
  let skipped = 0;
  for (const attempt of attempts) {
    if (aborts.aborted) return null;
    const name = attempt.upstream.metadata.name;
    const record = exchange.startAttempt(name, attempt.upstreamModel, settingsOf(attempt.upstream).server);
    // With a vet, the breaker's verdict on a 2xx waits for the vet's (call.verdict).
    const upstreamCall: UpstreamCall = { exchange, attempt, request, record, headers: { ...headers }, aborts, holdVerdict: vet !== undefined };
    let outcome: Outcome;
    try {
      outcome = await call(upstreamCall);
    } catch (error) {
      // A request the target's provider cannot take (a translation's 400): nothing was sent.
      settle(record, 'refused', (error as { code?: string }).code ?? 'exception');
      throw error;
    }
    if (outcome.kind === 'skipped') {
      if (outcome.why === 'breaker_open') {
        skipped++;
        settle(record, 'skipped', 'breaker_open');
      } else {
        lastFailure = outcome.detail ? providerCredentialFailed(name, outcome.detail) : missingCredential(name);
        settle(record, 'refused', 'missing credentials');
      }
      continue;
    }
    if (outcome.kind === 'aborted') {
      settle(record, 'aborted', exchange.abortReason ?? 'aborted');
      return null;
    }
    if (outcome.kind === 'failed') {
      settle(record, 'failed', outcome.code);
      lastFailure = TIMEOUT_ERRORS.has(outcome.code) ? upstreamTimeout(subject) : noTargetLeft(subject, 1, `last error: ${outcome.code} from '${name}'`);
      continue;
    }
    const { response } = outcome;
    const status = response.statusCode;
    const secret = upstreamCall.secret ?? null;
    const module = moduleOf(providers, attempt.upstream);
    if (module && status >= 300) {
      // A translated provider's error, in OpenAI's words: its own statuses (Anthropic's 529, Bedrock's
      // exception names) decide as OpenAI's would.
      const text = scrubAll(await readErrorText(response.body, ERROR_BODY_BYTES), secret, upstreamCall.secrets);
      const error = module.translation.error(status, response.headers, text);
      if (error.credentialRefused) {
        settle(record, 'failed', 'upstream_auth_failed');
        throw upstreamAuthFailed(name);
      }
      if (error.status === 429 || error.status >= 500) {
        settle(record, 'failed', `upstream_${status}`);
        lastFailure = translatedError({ ...error, message: scrubAll(error.message, secret, upstreamCall.secrets) }, secret);
        continue;
      }
      settle(record, 'answered', null);
      throw translatedError({ ...error, message: scrubAll(error.message, secret, upstreamCall.secrets) }, secret);
    }
    if (status === 429 || status >= 500) {
      const text = await readErrorText(response.body, ERROR_BODY_BYTES);
      settle(record, 'failed', `upstream_${status}`);
      lastFailure = status === 429 ? relayedClientError(429, text, secret, retryHints(response.headers)) : noTargetLeft(subject, 1, `'${name}' answered ${status}: ${scrub(messageOf(text), secret)}`);
      continue;
    }
    if (status === 401 || status === 403) {
      // Our credential is wrong: say so, and do not let the breaker hide a configuration error.
      await readErrorText(response.body, ERROR_BODY_BYTES);
      settle(record, 'failed', 'upstream_auth_failed');
      throw upstreamAuthFailed(name);
    }
    if (status >= 400) {
      const text = await readErrorText(response.body, CLIENT_ERROR_BYTES);
      settle(record, 'answered', null);
      throw relayedClientError(status, text, secret);
    }
    const answer: Answer = { response, attempt, secret, secrets: upstreamCall.secrets ?? [], record, aborts };
    if (vet && status < 300) {
      const verdict = upstreamCall.verdict ?? (() => undefined);
      let rejection: Rejection | null;
      try {
        rejection = await vet(answer);
      } catch (error) {
        verdict(null);
        throw error;
      }
      if (aborts.aborted) {
        verdict(null);
        response.body.destroy();
        settle(record, 'aborted', exchange.abortReason ?? 'aborted');
        return null;
      }
      verdict(rejection ? rejection.healthy : true);
      if (rejection) {
        settle(record, 'failed', rejection.code);
        if (!rejection.retry) throw rejection.error;
        lastFailure = rejection.error;
        continue;
      }
    }
    exchange.upstream = name;
    watchAnswer(exchange, record, response);
    return answer;
  }
  if (lastFailure) throw lastFailure;
  const wait = Math.ceil(breakers.retryAfterMs(attempts.map((a) => a.upstream.metadata.name)) / 1000);
  throw noTargetLeft(subject, wait, skipped > 0 ? 'every target is cooling down after failures' : 'the model has no usable target');
}

function scrubAll(text: string, secret: string | null, others: readonly string[] = []): string {
  let out = scrub(text, secret);
  for (const other of others) out = scrub(out, other);
  return out;
}

function settle(record: UpstreamAttempt, outcome: UpstreamAttempt['outcome'], error: string | null): void {
  record.outcome = outcome;
  record.error = error;
  record.durationMs ??= sinceAttempt(record);
}

/**
 * The kept answer's attempt ends when its body does (relayed, cut, or the client gone). A body cut by
 * a clock (idle between chunks, a non-stream answer's total) ends the request with the reason
 * `timeout`: after the body's 'error', so a stream writer has already ended the stream with its
 * error event, and before a reader's rejection is handled (relay.ts answers 504 then).
 */
function watchAnswer(exchange: Exchange, record: UpstreamAttempt, response: Dispatcher.ResponseData): void {
  const body = response.body;
  const closed = () => {
    if (record.outcome !== 'pending') return;
    const timeout = bodyTimeoutOf(body.errored);
    if (timeout) {
      settle(record, 'failed', timeout);
      exchange.abort('timeout');
      return;
    }
    settle(record, exchange.aborted ? 'aborted' : 'answered', exchange.abortReason);
  };
  // A stream the vet read to its end may have closed already.
  if (body.closed) closed();
  else body.once('close', closed);
}

function retryHints(headers: Dispatcher.ResponseData['headers']): Record<string, string> {
  const hints: Record<string, string> = {};
  for (const name of ['retry-after', 'retry-after-ms', 'x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']) {
    const value = headers[name];
    if (typeof value === 'string') hints[name] = value;
  }
  return hints;
}

function messageOf(text: string): string {
  try {
    const parsed = JSON.parse(text);
    const message = parsed?.error?.message ?? parsed?.message;
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {}
  return text.slice(0, 300);
}
