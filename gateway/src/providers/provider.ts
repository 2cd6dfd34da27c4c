// The seam between the gateway and a provider that does not speak the OpenAI API (Anthropic, Gemini,
// Vertex AI, Bedrock). A provider is a folder of pure transforms behind this interface: the request a
// provider is sent for one attempt, its answer and its stream turned into OpenAI's, its errors turned
// into OpenAI's. No I/O happens here: the upstream layers (upstream/with-provider-auth.ts) add the
// credential over the final bytes, the fallback decides on the status, and the relay feeds the
// translators (upstream/translated-relay.ts). A Model may mix providers in its targets, so the
// translation is chosen per attempt, by the answering Upstream's `spec.provider`.
import type { Upstream } from '@tollgate/crds';
import type { StopSequenceHit } from '../exchange/exchange.ts';

/** An OpenAI request body as the client sent it (already checked by the route for OpenAI's own rules). */
export type OpenAIBody = Record<string, unknown>;

/** The provider names of `Upstream.spec.provider` that need translation. */
export type TranslatedProvider = 'anthropic' | 'gemini' | 'vertex' | 'bedrock';

export interface ProviderRequestContext {
  /** The provider's own model id: the target's `model` (e.g. `claude-sonnet-4-5`, an inference-profile ARN). */
  model: string;
  /** The Upstream resource this attempt goes to (its `vertex`/`bedrock` settings, switches). */
  upstream: Upstream;
}

/** What a provider is sent for one attempt, before authentication (which signs these exact bytes). */
export interface ProviderRequest {
  /**
   * Path and query on the provider's origin, already percent-encoded for the wire:
   * `/v1/messages`, `/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`,
   * `/model/us.anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream`.
   */
  path: string;
  method: 'POST' | 'GET';
  /** Non-secret headers (`content-type`, `anthropic-version`, `accept`). Lower-case names. */
  headers: Record<string, string>;
  /** The JSON text sent. */
  body: string;
}

/** What every answer translator is told about the request it answers. */
export interface AnswerContext {
  /** The model name the client asked for: the `model` of every answer and chunk. */
  publicModel: string;
  /** The provider model id the attempt asked for (for providers whose answers name none). */
  providerModel: string;
  /** `chatcmpl-…` ids use the provider's message id when it has one, else this (the gateway's request id). */
  requestId: string;
  /** Unix seconds, for `created`. */
  created: number;
  /** The client asked for `stream_options.include_usage`: the usage chunk is sent. */
  includeUsage: boolean;
  /** The answer's response headers (Bedrock's `x-amzn-requestid`), lower-case names. */
  responseHeaders: Record<string, string | string[] | undefined>;
}

/** OpenAI's usage object, in OpenAI's meaning (cached input inside prompt_tokens, reasoning inside completion_tokens). */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; [key: string]: number };
  completion_tokens_details?: { reasoning_tokens: number; [key: string]: number };
}

/**
 * An in-band failure of a provider's stream (an `error` event, an exception frame, a body that ended
 * before the provider's terminal event): the relay writes it to the client as OpenAI's
 * `data: {"error":{…}}` frame (which the SDKs raise) and ends the stream, never with `[DONE]`.
 */
export class ProviderStreamError extends Error {
  readonly code: string;
  readonly type: string;
  constructor(message: string, code = 'upstream_stream_error', type = 'server_error') {
    super(message);
    this.name = 'ProviderStreamError';
    this.code = code;
    this.type = type;
  }
}

/** Turns a provider's stream, as the bytes arrive, into OpenAI `chat.completion.chunk` SSE frames. */
export interface ChatStreamTranslator {
  /**
   * Provider bytes in (any split: a read may end mid-frame), OpenAI SSE text out (`data: {…}\n\n`
   * frames, `: ping` comments for keep-alives), '' when nothing is complete yet. Throws
   * ProviderStreamError when the provider reported a failure in the stream.
   */
  feed(chunk: Buffer): string;
  /**
   * The provider's body ended: the last frames (the finish chunk if not yet sent, the usage chunk when
   * asked for, `data: [DONE]\n\n`). Throws ProviderStreamError when the provider's terminal event never
   * arrived (a truncated stream is never a success).
   */
  end(): string;
  /** The usage the provider reported so far, in OpenAI's meaning (for limits and metrics), or null. */
  usage(): OpenAIUsage | null;
  /** The finish reason decided so far (`stop`, `length`, `tool_calls`, `content_filter`), or null. */
  finishReason(): string | null;
  /** The stream stopped on a stop sequence, where the provider says so (never in the OpenAI chunks: exchange.stopSequence). */
  stopSequence?(): StopSequenceHit | null;
}

/** A provider's error answer as the client must see it. */
export interface TranslatedError {
  /** The status the client gets: 400/404/413/429/500/503/504, or 502 for a refused gateway credential. */
  status: number;
  message: string;
  type: 'invalid_request_error' | 'rate_limit_error' | 'insufficient_quota' | 'server_error' | 'permission_error' | 'not_found_error';
  code: string | null;
  param: string | null;
  /** Seconds (or an HTTP date) to wait, from the provider's header or body (Google's RetryInfo). */
  retryAfter?: string;
  /** The gateway's own credential was refused (401/403-like): never shown to the client as its key's fault. */
  credentialRefused?: boolean;
}

export interface EmbeddingsTranslation {
  /** One or more provider calls for one OpenAI embeddings request (Titan takes one input per call). */
  requests(body: OpenAIBody, ctx: ProviderRequestContext): ProviderRequest[];
  /** The provider answers (in request order) as OpenAI's `{object:"list",data,model,usage}`, honouring `encoding_format`. */
  response(answers: unknown[], body: OpenAIBody, ctx: AnswerContext): Record<string, unknown>;
}

/** One provider's translation. Every function is pure; a 400 for the client is thrown as an ApiError (http/errors.ts) with its `param`. */
export interface ProviderTranslation {
  name: TranslatedProvider;
  /** The `gen_ai.provider.name` of OpenTelemetry's semantic conventions: `anthropic`, `gcp.gemini`, `gcp.vertex_ai`, `aws.bedrock`. */
  semconvName: string;
  /** The provider's public endpoint, used when the Upstream sets no `baseURL`. */
  defaultBaseURL(upstream: Upstream): string;
  chatRequest(body: OpenAIBody, ctx: ProviderRequestContext, stream: boolean): ProviderRequest;
  /** A provider's whole (non-stream) answer as OpenAI's `chat.completion` object. */
  chatResponse(json: unknown, ctx: AnswerContext): Record<string, unknown> & { usage?: OpenAIUsage };
  /** The whole answer stopped on a stop sequence, where the provider says so: what `finish_reason: "stop"` cannot tell (exchange.stopSequence). */
  chatStopSequence?(json: unknown): StopSequenceHit | null;
  chatStream(ctx: AnswerContext): ChatStreamTranslator;
  /** A non-2xx answer: status, headers (lower-case) and up to 64 KiB of its body text. */
  error(status: number, headers: Record<string, string | string[] | undefined>, text: string): TranslatedError;
  /** Absent: the provider offers no embeddings (Anthropic); the gateway answers 400. */
  embeddings?: EmbeddingsTranslation;
  /** The cheapest authenticated call that proves the Upstream works (the operator's probe). */
  probe(upstream: Upstream): ProviderRequest;
  /**
   * The model ids in the probe's 2xx answer (parsed JSON), in the provider's own list shape; undefined
   * when the answer is not a whole model list. Absent: the probe is not a list (Bedrock's), so the
   * operator reports no count rather than 0.
   */
  probeModels?(json: unknown): string[] | undefined;
}

/** What each provider folder exports (`providers/<name>/index.ts`), registered in providers/registry.ts. */
export interface ProviderModule {
  translation: ProviderTranslation;
  auth: import('./auth.ts').ProviderAuth;
}
