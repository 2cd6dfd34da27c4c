// One call to one upstream target, and the layers it goes through. Like undici's own interceptors
// (`dispatcher.compose(...)`), each concern wraps the next: credentials and model rewrite, circuit
// breaker, timeouts, then the dispatch on the upstream's pool. The layers work on whole calls (a
// promise of the answer's head), not on undici's handler callbacks: a breaker and a fallback decide on
// a status, and that is where the status is. The fallback across targets (fallback.ts) sits above.
import { EventEmitter } from 'node:events';
import type { Dispatcher, FormData } from 'undici';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import type { JsonObject } from '../http/body.ts';
import type { Attempt } from './targets.ts';

export interface AttemptRequest {
  /** Path under /v1, e.g. `/chat/completions`. */
  endpoint: string;
  method: string;
  /**
   * JSON body; its `model` is rewritten per target (left alone when the attempt names no model).
   * A body from readJsonBody is sent as the bytes the client wrote, with changed top-level members
   * spliced in: change it only at the top level (see http/body.ts).
   */
  json?: JsonObject;
  /** A multipart body, rebuilt for each attempt (file parts are re-read from the spool each time). */
  form?: (attempt: Attempt) => Promise<FormData>;
  search?: string;
  /** Image generation and uploads: a longer total time for the answer. */
  longRunning?: boolean;
  /**
   * What the request asks of a model, for targets whose provider needs it translated
   * (providers/registry.ts): chat completions and embeddings are translated; `messages` is the
   * Anthropic Messages API relayed as it came to an Anthropic upstream (routes/messages.ts).
   */
  operation?: 'chat' | 'embeddings' | 'messages';
  /** `messages`: the client's headers that change what Anthropic does (anthropic-version, anthropic-beta). */
  clientHeaders?: Record<string, string>;
  /** `messages`: the request's bytes as the client sent them, relayed when the target's model is the one they name. */
  bytes?: Buffer;
}

/** One call as the layers see it; each layer may add to it before passing it on. */
export interface UpstreamCall {
  exchange: Exchange;
  attempt: Attempt;
  request: AttemptRequest;
  /** The exchange's record of this attempt: the layers fill in its timings and outcome. */
  record: UpstreamAttempt;
  /** Request headers sent upstream (client headers that carry no identity, the request id, credentials). */
  headers: Record<string, string>;
  body?: Dispatcher.DispatchOptions['body'];
  /** Aborts the call: the client left, the gateway shuts down, or this attempt's total time is up. */
  aborts: UpstreamAbort;
  /** Set by the timeouts layer: time to response headers, and the longest pause between body chunks. */
  headersTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** The upstream credential, once the credentials layer found it; for scrubbing error texts. */
  secret?: string | null;
  /** A translated provider's other secrets (a session token, a minted access token): scrubbed too. */
  secrets?: string[];
  /** The path and query sent, when not the endpoint under the base URL's path (translated providers, Azure). */
  path?: string;
  /** The fallback vets 2xx answers before keeping them (fallback.ts): the breaker's verdict on one waits for it. */
  holdVerdict?: boolean;
  /**
   * Set by the breaker layer on a 2xx when `holdVerdict`: gives its verdict (true success, false
   * failure, null none — the probe slot is released). The fallback calls it once, on every way out.
   */
  verdict?: (healthy: boolean | null) => void;
}

export type Outcome =
  | { kind: 'answered'; response: Dispatcher.ResponseData }
  /** Failed before the answer's headers (connection error, timeout): worth trying another target. */
  | { kind: 'failed'; code: string }
  /** The exchange was aborted (client gone, shutdown). */
  | { kind: 'aborted' }
  /** Not sent: the breaker is open (cooling down) or no credential is configured. */
  | { kind: 'skipped'; why: 'breaker_open' | 'missing_credentials'; detail?: string };

export type CallUpstream = (call: UpstreamCall) => Promise<Outcome>;
export type Layer = (next: CallUpstream) => CallUpstream;

/** `compose(a, b, c)(dispatch)`: a call goes through a, then b, then c, then dispatch. */
export function compose(...layers: Layer[]): (dispatch: CallUpstream) => CallUpstream {
  return (dispatch) => layers.reduceRight((next, layer) => layer(next), dispatch);
}

/**
 * Aborts the upstream calls of one client request. undici accepts an EventEmitter with `aborted` and
 * `reason` as a signal, so one of these serves every attempt of a request, where an AbortController
 * per attempt joined to the exchange's by AbortSignal.any cost 2% of a chat request's CPU. The
 * exchange's abort (client gone, shutdown) ends the call in flight and every later one; an attempt's
 * total timeout ends its own call only, and the request may go on to another target.
 */
export class UpstreamAbort extends EventEmitter {
  aborted = false;
  /** Read by undici's listener as the abort's cause; null makes it a RequestAbortedError. */
  reason: Error | null = null;
  /** Which attempt is in flight, so that a late timer of an earlier one cannot abort it. */
  attempt = 0;

  constructor(exchange: Exchange) {
    super();
    exchange.onAbort(() => this.abortAll());
  }

  /** The exchange was aborted: the call in flight ends, and no other starts. */
  abortAll(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }

  /** An attempt's total time is up: its call ends (the answer's body too, if it is being relayed). */
  abortAttempt(attempt: number, reason: Error): void {
    if (this.aborted || attempt !== this.attempt) return;
    this.reason = reason;
    this.emit('abort');
    this.reason = null;
  }
}
