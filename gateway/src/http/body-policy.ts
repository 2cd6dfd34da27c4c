// How request bodies are read, beyond each one's size limit: a client that stops sending mid-body is
// answered 408 after an idle timeout (so it cannot hold a socket, a concurrency slot and a buffer
// forever), and everything a request holds in memory because of its body (a JSON body and its parsed
// object; a form's text fields, and the file parts service-test reads back) shares one budget of
// bytes, so fifty large uploads at the same time get 503 and Retry-After instead of taking the
// process out of memory. Forms spool their files to disk, which has a budget of its own. What a
// request took is given back when its response closes: its bytes and parsed object live that long.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './errors.ts';
import type { JsonParserPool } from './json-parser-pool.ts';

export interface BodyPolicy {
  /** Longest pause between two reads of a body before the request is answered 408 (0: none). */
  idleTimeoutMs: number;
  /** Memory: bytes held because of request bodies, across every request. */
  budget: BodyBudget;
  /** Disk: bytes of multipart bodies being received or spooled at once (none: unbounded). */
  formBudget?: BodyBudget;
  /** Parses JSON bodies of `offloadFromBytes` and more off the event loop (null: every body on it). */
  parser: JsonParserPool | null;
  offloadFromBytes: number;
}

/** Bytes of request bodies that may be held in memory at once, across every request. */
export class BodyBudget {
  readonly capacity: number;
  #used = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit; false (and nothing taken) when they do not. */
  tryTake(bytes: number): boolean {
    if (this.#used + bytes > this.capacity) return false;
    this.#used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

export function bodyTimeout(idleMs: number): ApiError {
  return new ApiError(408, 'request_timeout', `The request body stopped arriving: nothing was received for ${idleMs / 1000} s. Send the whole body without pausing.`, {
    type: 'invalid_request_error',
    timedOut: true,
  });
}

export function budgetExhausted(): ApiError {
  return new ApiError(503, 'server_busy', 'The gateway is holding as many request bodies as it can right now. Retry shortly.', {
    type: 'server_error',
    headers: { 'Retry-After': '1' },
  });
}

/**
 * Bytes one request holds from a budget, given back when its response closes. `take` throws 503
 * (server_busy) when they do not fit, and after the response closed (nothing would give them back).
 */
export class BudgetHold {
  readonly #budget: BodyBudget;
  readonly #res: ServerResponse;
  #taken = 0;
  #giving = false;

  constructor(budget: BodyBudget, res: ServerResponse) {
    this.#budget = budget;
    this.#res = res;
  }

  get taken(): number {
    return this.#taken;
  }

  take(bytes: number): void {
    if (bytes <= 0) return;
    if (this.#res.closed || !this.#budget.tryTake(bytes)) throw budgetExhausted();
    this.#taken += bytes;
    if (this.#giving) return;
    this.#giving = true;
    this.#res.once('close', () => {
      this.#budget.give(this.#taken);
      this.#taken = 0;
    });
  }
}

export interface BodyWatch {
  /** Rejects when the body goes idle or the budget runs out; never resolves. */
  failed: Promise<never>;
  /** Stops the idle timer (the body is complete); the budget stays taken until the response closes. */
  stop(): void;
}

/**
 * Watches a body being read: every chunk restarts the idle timer and, for a body without a declared
 * length, takes its size from the budget; a declared length is taken whole before the first byte
 * (throws 503 at once when it does not fit). Everything taken is given back when `res` closes.
 */
export function watchBody(req: IncomingMessage, res: ServerResponse, policy: BodyPolicy, declared: number | null, budgeted = true): BodyWatch {
  const { budget, idleTimeoutMs } = policy;
  let taken = 0;
  let giving = false;
  const take = (bytes: number) => {
    taken += bytes;
    if (giving) return;
    giving = true;
    res.once('close', () => {
      budget.give(taken);
      taken = 0;
    });
  };
  if (budgeted && declared !== null && declared > 0) {
    if (!budget.tryTake(declared)) throw budgetExhausted();
    take(declared);
  }
  let fail!: (error: ApiError) => void;
  const failed = new Promise<never>((_resolve, reject) => (fail = reject));
  // Whoever awaits the body may already have gone when this rejects (the body ended first).
  failed.catch(() => {});
  let timer: NodeJS.Timeout | null = null;
  const arm = () => {
    if (idleTimeoutMs <= 0) return;
    if (timer) timer.refresh();
    else timer = setTimeout(() => finish(bodyTimeout(idleTimeoutMs)), idleTimeoutMs);
  };
  const onData = (chunk: Buffer) => {
    arm();
    if (!budgeted || declared !== null) return;
    if (budget.tryTake(chunk.length)) take(chunk.length);
    else finish(budgetExhausted());
  };
  const stop = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    req.off('data', onData);
    req.off('end', stop);
    req.off('close', stop);
  };
  const finish = (error: ApiError) => {
    stop();
    fail(error);
  };
  req.on('data', onData);
  req.once('end', stop);
  req.once('close', stop);
  arm();
  return { failed, stop };
}
