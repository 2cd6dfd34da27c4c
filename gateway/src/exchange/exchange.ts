// One request, one owner. An Exchange is created once at the edge (http/envelope.ts) and carries
// everything the request's life needs and everything an observer wants to know about it: its id,
// principal and operation, the model asked for and the one that answered, usage, the limits lease,
// every upstream attempt with its timings and outcome, an AbortSignal whose reason says why the
// request stopped, and one ordered list of end hooks. The edge calls end() exactly once, from one
// place, whatever happened (an answer, an error, a client that left, a shutdown); the hooks run
// then, in the order they were registered, each guarded so that one failing cannot skip the others.
//
// Koa-free on purpose: upstream/, limits/, backends and observers see this, never a Koa context.
import type { ServerResponse } from 'node:http';
import type { RequestLimits } from '../limits/request-limits.ts';
import type { Link } from './open-list.ts';
import type { Principal } from './principal.ts';

/** An answer stopped on a stop sequence: which one, when the backend named it (null when it did not). */
export interface StopSequenceHit {
  sequence: string | null;
}

/** Why a request was stopped before its answer was complete. */
export type AbortReason = 'client_gone' | 'shutdown' | 'timeout';

/** The signal's reason: an AbortError that names why. */
export class ExchangeAborted extends Error {
  readonly reason: AbortReason;
  constructor(reason: AbortReason) {
    super(reason === 'client_gone' ? 'The client closed the connection.' : reason === 'shutdown' ? 'The gateway is shutting down.' : 'The request took too long.');
    this.name = 'AbortError';
    this.reason = reason;
  }
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input, tokens the provider served from its prompt cache (priced as such). */
  cachedInputTokens?: number;
  /** Of the output, reasoning tokens (priced as output; kept for logs and spans). */
  reasoningTokens?: number;
  /** Seconds of audio a transcription or translation reported (priced per second). */
  audioSeconds?: number;
}

/** How an upstream attempt ended. */
export type AttemptOutcome =
  /** Still running (its answer is being relayed). */
  | 'pending'
  /** The answer was taken and relayed (whatever its status). */
  | 'answered'
  /** The upstream failed (connection error, timeout, 429/5xx) and the request went on or gave up. */
  | 'failed'
  /** The request was aborted (client gone, shutdown) while this attempt ran. */
  | 'aborted'
  /** Not sent: no credentials configured. */
  | 'refused'
  /** Not sent: the upstream's circuit breaker is open. */
  | 'skipped';

/** One call to one upstream target. Times are milliseconds since the attempt started. */
export interface UpstreamAttempt {
  /** The Upstream resource's name. */
  upstream: string;
  /** The model name sent upstream; null for requests that name none (files, batches). */
  model: string | null;
  /** Where the call went: host and port of the upstream's base URL. */
  server: { address: string; port: number } | null;
  /** performance.now() when the attempt started. */
  startedAt: number;
  /** Time to the answer's status and headers. */
  headersMs: number | null;
  /** Time to the answer's first body byte (a stream's first event). */
  firstByteMs: number | null;
  /** Time until the answer's body ended, was cut, or the attempt failed. */
  durationMs: number | null;
  status: number | null;
  outcome: AttemptOutcome;
  /** A stable code when it failed: UND_ERR_HEADERS_TIMEOUT, upstream_5xx, client_gone, … */
  error: string | null;
}

/**
 * Message contents kept for the request's span, only while OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
 * is on and the span is recorded (telemetry/content-capture.ts turns them into attributes).
 */
export interface ContentCapture {
  /** The request body (chat, completions, Responses). */
  input: unknown;
  /** The answer object, when it was one JSON answer. */
  output: unknown;
  /** The data of a relayed stream's events, bounded. */
  streamed: string[];
  streamedChars: number;
}

export type EndHook = (exchange: Exchange) => void | Promise<void>;

/** The request's place in a trace (telemetry sets it when tracing is on). */
export interface TraceIds {
  traceId: string;
  spanId: string;
  /** Whether the trace is recorded and exported (the sampler's decision). */
  sampled: boolean;
}

export interface ExchangeInit {
  id: string;
  method: string;
  path: string;
  /** Reports a hook that threw; hooks are never allowed to stop the others. */
  onHookError: (error: unknown, exchange: Exchange) => void;
  /** Hooks that every exchange runs after its own (observers: access log, metrics). */
  commonEndHooks?: readonly EndHook[];
  /** Called once every hook has run. */
  onDone?: (exchange: Exchange) => void;
}

export class Exchange {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  /** performance.now() at creation; durations are measured from here. */
  readonly startedAt = performance.now();
  /** Wall-clock time at creation (ms since the epoch). */
  readonly startTime = Date.now();

  /** The matched route template (`/v1/chat/completions`), once routing has happened. */
  route: string | null = null;
  /** What is being done, in OpenAI's terms: `chat.completions`, `responses`, `embeddings`, … */
  operation: string | null = null;
  principal: Principal | null = null;
  /** The model the client asked for. */
  modelRequested: string | null = null;
  /** The model the upstream answered with (its own name, as its answer said), or the service-test model. */
  modelAnswered: string | null = null;
  /** Why each choice of the answer stopped (`stop`, `length`, `tool_calls`, …), by choice index, as the answer said. */
  finishReasons: string[] | null = null;
  /**
   * The answer stopped on one of the request's stop sequences, where the backend says so (Bedrock's
   * `stop_sequence` stop reason, Anthropic's, service-test's own cut). Chat's finish_reason says only
   * `stop`: this is for the dialects that tell more (the Messages API), never part of an OpenAI answer.
   */
  stopSequence: StopSequenceHit | null = null;
  /** Images named by http(s) URL that the gateway fetched for a provider that takes only bytes (upstream/with-remote-images.ts): how many, their bytes, the time it took. */
  imageFetch: { images: number; bytes: number; ms: number } | null = null;
  /** Set by telemetry when message contents are to be recorded for this request; null otherwise (the default). */
  content: ContentCapture | null = null;
  /** True when the answer is an event stream. */
  stream = false;
  /** Tokens used, as reported by the upstream (or counted by service-test). */
  usage: Usage | null = null;
  /**
   * What the request costs, in micros of the gateway's currency (limits/money.ts): set when it ends,
   * from the usage reported and its Model's pricing; null when its model has no pricing.
   */
  cost: number | null = null;
  /** The plan limits holding this request (its lease), when any apply. */
  limits: RequestLimits | null = null;
  /** Every upstream call, in order. */
  readonly attempts: UpstreamAttempt[] = [];
  /** The upstream that answered. */
  upstream: string | null = null;
  /** The X-Service-Request-Id a client that is not a trusted proxy sent, sanitised: logged apart, never the id. */
  clientRequestId: string | null = null;
  /** Set when a stream that had started ended with an in-band error (its code). */
  streamError: string | null = null;
  /** The error answered: its code and, where the refusing check names one, why (auth check, limit name). */
  error: { code: string; reason?: string } | null = null;
  /** performance.now() when the first byte of a streamed answer went to the client (time to first token). */
  firstByteAt: number | null = null;
  /** The status sent (or that would have been), set when the exchange ends. */
  status = 0;
  /** Set at the end: whether the answer was written completely (false: cut off, client gone). */
  completed = false;
  /** Set at the end: whether the status and headers had gone out. */
  answered = false;
  /** Its server span's ids, with tracing on: for the access line, exemplars and upstream calls. */
  trace: TraceIds | null = null;
  /** Its place among the open exchanges (exchanges.ts), while it is open. */
  openLink: Link<Exchange> | null = null;
  /** What an observer keeps for this request while it runs (telemetry.ts: its RequestTelemetry). */
  observed: object | null = null;
  /** The client-facing response (Node's), set at the edge: shutdown marks unsent answers `Connection: close`. */
  response: ServerResponse | null = null;

  readonly #onHookError: ExchangeInit['onHookError'];
  readonly #common: readonly EndHook[];
  readonly #onDone: ExchangeInit['onDone'];
  #hooks: EndHook[] = [];
  #controller: AbortController | null = null;
  #abortReason: AbortReason | null = null;
  #onAbort: Array<(reason: AbortReason) => void> | null = null;
  #ended: Promise<void> | null = null;

  constructor(init: ExchangeInit) {
    this.id = init.id;
    this.method = init.method;
    this.path = init.path;
    this.#onHookError = init.onHookError;
    this.#common = init.commonEndHooks ?? [];
    this.#onDone = init.onDone;
  }

  /**
   * Aborted when the request must stop: its reason is an ExchangeAborted naming why. Created on first
   * use: a request answered in-process never pays for one.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason) this.#controller.abort(new ExchangeAborted(this.#abortReason));
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#abortReason !== null;
  }

  /** Why the request was stopped; null while it was not. */
  get abortReason(): AbortReason | null {
    return this.#abortReason;
  }

  /** Stops the request: upstream calls end, streams stop. The first reason given is kept. */
  abort(reason: AbortReason): void {
    if (this.#abortReason) return;
    this.#abortReason = reason;
    const listeners = this.#onAbort;
    this.#onAbort = null;
    if (listeners) for (const listener of listeners) listener(reason);
    this.#controller?.abort(new ExchangeAborted(reason));
  }

  /**
   * Calls `listener` once when the exchange is aborted (at once if it already was). The gateway's own
   * modules use this rather than `signal`: an AbortController and an EventTarget listener per request
   * are measurable on the hot path; `signal` is for code that needs a real AbortSignal.
   */
  onAbort(listener: (reason: AbortReason) => void): void {
    if (this.#abortReason) listener(this.#abortReason);
    else (this.#onAbort ??= []).push(listener);
  }

  /** True once end() has been called: nothing should be taken or held for this request any more. */
  get ended(): boolean {
    return this.#ended !== null;
  }

  /**
   * Runs `hook` when the request ends, after the hooks registered before it. Registered after the
   * end, it runs at once (still exactly once): something taken late is still given back.
   */
  onEnd(hook: EndHook): void {
    if (this.#ended) {
      this.#ended = this.#ended.then(() => this.#run(hook));
      return;
    }
    this.#hooks.push(hook);
  }

  /** Ends the exchange: called once by the edge; later calls return the same promise. */
  end(status: number, answered: boolean, completed: boolean): Promise<void> {
    if (this.#ended) return this.#ended;
    this.status = status;
    this.answered = answered;
    this.completed = completed;
    this.#ended = this.#runAll();
    return this.#ended;
  }

  /** Resolves when every end hook has run (null before the end). */
  get whenEnded(): Promise<void> | null {
    return this.#ended;
  }

  /** Starts an attempt record; the upstream layer fills it in as the call goes. */
  startAttempt(upstream: string, model: string | null, server: UpstreamAttempt['server']): UpstreamAttempt {
    const attempt: UpstreamAttempt = { upstream, model, server, startedAt: performance.now(), headersMs: null, firstByteMs: null, durationMs: null, status: null, outcome: 'pending', error: null };
    this.attempts.push(attempt);
    return attempt;
  }

  /**
   * Synchronous hooks run in this tick; an asynchronous one is awaited before the next starts. Most
   * requests have only synchronous hooks: they end without an async function or a new promise.
   */
  #runAll(): Promise<void> {
    const hooks = this.#hooks;
    this.#hooks = [];
    const pending = this.#runFrom(hooks, 0, 0);
    if (pending) return pending;
    this.#onDone?.(this);
    return ENDED;
  }

  /** Runs the exchange's own hooks from `own`, then the common ones from `common`; a promise once one is asynchronous. */
  #runFrom(own: EndHook[], ownFrom: number, commonFrom: number): Promise<void> | null {
    for (let i = ownFrom; i < own.length; i++) {
      const pending = this.#run(own[i]);
      if (pending) return pending.then(() => this.#finishFrom(own, i + 1, 0));
    }
    const common = this.#common;
    for (let i = commonFrom; i < common.length; i++) {
      const pending = this.#run(common[i]);
      if (pending) return pending.then(() => this.#finishFrom(own, own.length, i + 1));
    }
    return null;
  }

  async #finishFrom(own: EndHook[], ownFrom: number, commonFrom: number): Promise<void> {
    const pending = this.#runFrom(own, ownFrom, commonFrom);
    if (pending) return pending;
    this.#onDone?.(this);
  }

  #run(hook: EndHook): void | Promise<void> {
    try {
      const result = hook(this);
      if (result && typeof result.then === 'function') return result.then(undefined, (error) => this.#onHookError(error, this));
    } catch (error) {
      this.#onHookError(error, this);
    }
  }
}

const ENDED: Promise<void> = Promise.resolve();

/** Milliseconds since the attempt started, to the microsecond. */
export function sinceAttempt(attempt: UpstreamAttempt): number {
  return Math.round((performance.now() - attempt.startedAt) * 1000) / 1000;
}
