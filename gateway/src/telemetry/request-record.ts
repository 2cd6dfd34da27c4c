// A finished request as metrics, spans and the access log see it: what happened (from the request's
// own record: status, error, usage, attempts, timings) turned into bounded label values once, so that
// the three agree and none of them can be handed a client's free text by mistake.
import type { Upstream } from '@tollgate/crds';
import type { Exchange, UpstreamAttempt } from '../exchange/exchange.ts';
import { SERVICE_TEST_MODEL, type Snapshot } from '../resources/snapshot.ts';
import { attemptErrorTypeOf, attemptOutcomeOf, errorTypeOf, identityOf, operationOf, OTHER, SELF_PROVIDER } from './genai.ts';

/** One upstream attempt as the request path recorded it. */
export interface AttemptRecord {
  upstream: string;
  /** The Upstream object tried (absent only in records made before the attempt could start). */
  target?: Upstream;
  /** The model name sent upstream (from the snapshot), null when the request named none. */
  upstreamModel?: string | null;
  status?: number;
  error?: string;
  /** performance.now() at the attempt's start. */
  startedAt?: number;
  /** Its duration: to its failure, or to the end of its relayed answer; null while that answer was still open. */
  ms: number | null;
  /** Not sent: the upstream's circuit was open. */
  skipped?: boolean;
}

/** The request as the request path recorded it (http/ builds it from its own state). */
export interface RequestRecord {
  requestId: string;
  traceId: string | null;
  method: string;
  /** The matched route pattern; null when no route matched (404s). */
  route: string | null;
  status: number;
  errorCode?: string;
  /** Which check refused it (auth reason, limit name), a fixed list set by the code that refused. */
  errorReason?: string;
  /** The model the client named, unchecked. */
  model?: string;
  /** The model the answer named (the upstream's own name, unchecked), when it named one. */
  responseModel?: string;
  /** Why each choice of the answer stopped, as the answer said. */
  finishReasons?: readonly string[];
  startedAt: number;
  endedAt: number;
  /** performance.now() at the first byte of a streamed answer. */
  firstByteAt?: number;
  usage?: { inputTokens: number; outputTokens: number };
  account?: string;
  plan?: string;
  /** What the request cost, in micros of the currency (priced models only). */
  cost?: number;
  attempts: readonly AttemptRecord[];
  /** Which upstream answered, when one did. */
  answeredBy?: string;
}

export interface FinishedAttempt {
  upstream: string;
  provider: string;
  address: string;
  port: number;
  model: string;
  outcome: string;
  errorType: string | null;
  status?: number;
  durationS: number;
  answered: boolean;
  /** The answering attempt: the model its answer named (a span value) and that name as a label. */
  responseModel: string | null;
  responseModelLabel: string;
  /** Not sent (circuit open): counted as an attempt outcome, not as a call or a fallback. */
  skipped: boolean;
}

export interface FinishedRequest {
  requestId: string;
  traceId: string | null;
  method: string;
  route: string;
  status: number;
  errorCode: string | null;
  errorReason: string | null;
  errorType: string | null;
  /** gen_ai.operation.name, null for routes that are not GenAI operations. */
  operation: string | null;
  /** Label values: a snapshot model name, `_OTHER`, or empty when the request named none. */
  model: string;
  /** The model named in the answer the client got (the public name where the gateway renamed it): label, and value for spans. */
  responseModel: string;
  responseModelName: string | null;
  /** Why each choice stopped (spans only: gen_ai.response.finish_reasons). */
  finishReasons: string[] | null;
  provider: string;
  durationS: number;
  firstByteS: number | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  account: string | null;
  plan: string | null;
  /** Micros; null (or absent) when not priced. */
  cost?: number | null;
  attempts: FinishedAttempt[];
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/** A model name as a label: only names the snapshot knows (and the built-in model); anything else `_OTHER`. */
export function modelLabel(name: string | null | undefined, snapshot: Snapshot): string {
  if (!name) return '';
  return name === SERVICE_TEST_MODEL || snapshot.models.has(name) ? name : OTHER;
}

/**
 * A model name an answer gave, as a label: names the snapshot knows, and the target model names of
 * the model asked for (what upstreams are told to serve); anything else (a dated snapshot name such
 * as gpt-4o-2024-08-06) is `_OTHER`, so an upstream cannot grow the series.
 */
export function responseModelLabel(name: string | null | undefined, snapshot: Snapshot, requested: string | undefined): string {
  if (!name) return '';
  if (name === SERVICE_TEST_MODEL || snapshot.models.has(name)) return name;
  const model = requested ? snapshot.models.get(requested) : undefined;
  return model?.spec.targets.some((target) => target.model === name) ? name : OTHER;
}

/** The exchange, at its end, as telemetry reads it. */
export function recordOf(exchange: Exchange, snapshot: Snapshot, endedAt = performance.now()): RequestRecord {
  const principal = exchange.principal;
  return {
    requestId: exchange.id,
    traceId: null,
    method: exchange.method,
    route: exchange.route,
    status: exchange.status,
    errorCode: exchange.error?.code ?? exchange.streamError ?? undefined,
    errorReason: exchange.error?.reason,
    model: exchange.modelRequested ?? undefined,
    responseModel: exchange.modelAnswered ?? undefined,
    finishReasons: exchange.finishReasons ?? undefined,
    startedAt: exchange.startedAt,
    endedAt,
    firstByteAt: exchange.firstByteAt ?? undefined,
    usage: exchange.usage ?? undefined,
    account: principal?.account.metadata.name,
    plan: principal?.plan?.metadata.name,
    cost: exchange.cost ?? undefined,
    attempts: exchange.attempts.map((attempt) => attemptRecordOf(attempt, snapshot)),
    answeredBy: exchange.upstream ?? undefined,
  };
}

function attemptRecordOf(attempt: UpstreamAttempt, snapshot: Snapshot): AttemptRecord {
  // The exchange says how each attempt ended; an answer's status class already says why it failed.
  let error: string | undefined;
  if (attempt.outcome === 'skipped') error = 'breaker_open';
  else if (attempt.outcome === 'refused') error = 'missing credentials';
  else if (attempt.outcome === 'aborted') error = 'client closed';
  else if (attempt.outcome === 'failed' && attempt.status === null) error = attempt.error ?? 'UND_ERR_SOCKET';
  // An answer whose body a clock cut (idle, total): its status was fine, the attempt still failed.
  else if (attempt.outcome === 'failed' && attempt.error?.startsWith('UND_ERR_')) error = attempt.error;
  return {
    upstream: attempt.upstream,
    target: snapshot.upstreams.get(attempt.upstream),
    upstreamModel: attempt.model,
    status: attempt.status ?? undefined,
    error,
    startedAt: attempt.startedAt,
    ms: attempt.durationMs,
    skipped: attempt.outcome === 'skipped',
  };
}

export function finishRequest(record: RequestRecord, snapshot: Snapshot): FinishedRequest {
  const route = record.route ?? 'unmatched';
  const model = modelLabel(record.model, snapshot);
  const attempts = record.attempts.map((attempt) => finishAttempt(attempt, record, model, snapshot));
  const answering = attempts.find((a) => a.answered);
  // The client gets the public name where the gateway renamed the upstream's model, else the answer's own.
  const renamed = answering !== undefined && record.model !== undefined && answering.model !== model;
  const responseModelName = record.status >= 400 ? null : renamed ? record.model! : (record.responseModel ?? null);
  const finishReasons = record.finishReasons ? record.finishReasons.filter((reason) => typeof reason === 'string') : [];
  const errorType = record.status >= 400 ? errorTypeOf(record.status, record.errorCode) : record.errorCode ? errorTypeOf(500, record.errorCode) : null;
  return {
    requestId: record.requestId,
    traceId: record.traceId,
    method: METHODS.has(record.method) ? record.method : OTHER,
    route,
    status: record.status,
    errorCode: errorType === null ? null : errorTypeOf(record.status, record.errorCode),
    errorReason: record.errorReason ?? null,
    errorType,
    operation: operationOf(route),
    model,
    responseModel: renamed ? model : responseModelLabel(responseModelName, snapshot, record.model),
    responseModelName,
    finishReasons: finishReasons.length > 0 ? finishReasons : null,
    // A request no target answered (a refused credential, every target down) is still about the provider it was last tried on.
    provider: (answering ?? attempts.at(-1))?.provider ?? (model === SERVICE_TEST_MODEL ? SELF_PROVIDER : OTHER),
    durationS: (record.endedAt - record.startedAt) / 1000,
    firstByteS: record.firstByteAt === undefined ? null : (record.firstByteAt - record.startedAt) / 1000,
    // Counts as an upstream reported them: a number JSON allows (1e400 is Infinity) is not a count.
    usage: record.usage && Number.isFinite(record.usage.inputTokens + record.usage.outputTokens) ? record.usage : null,
    account: record.account ?? null,
    plan: record.plan ?? null,
    cost: record.cost ?? null,
    attempts,
  };
}

function finishAttempt(attempt: AttemptRecord, request: RequestRecord, publicModel: string, snapshot: Snapshot): FinishedAttempt {
  const identity = attempt.target ? identityOf(attempt.target) : { provider: OTHER, address: '', port: 0 };
  const answered = request.answeredBy === attempt.upstream && attempt.error === undefined && attempt.status !== undefined && attempt.status < 400;
  // The answering attempt lasts until its answer has been relayed (the request's end if still open), the others until they failed.
  const durationS = attempt.ms !== null ? attempt.ms / 1000 : attempt.startedAt !== undefined ? (request.endedAt - attempt.startedAt) / 1000 : 0;
  return {
    upstream: attempt.upstream,
    provider: identity.provider,
    address: identity.address,
    port: identity.port,
    // Target model names come from the snapshot, so they are bounded like the public ones.
    model: attempt.upstreamModel ?? publicModel,
    outcome: attemptOutcomeOf(attempt.status, attempt.error),
    errorType: attemptErrorTypeOf(attempt.status, attempt.error),
    status: attempt.status,
    durationS,
    answered,
    responseModel: answered ? (request.responseModel ?? null) : null,
    responseModelLabel: answered ? responseModelLabel(request.responseModel, snapshot, request.model) : '',
    skipped: attempt.skipped === true,
  };
}
