// A chat request's http(s) image URLs replaced by data URLs of the images they name, for the
// providers that take images only as bytes (Gemini, Vertex AI, Bedrock): what OpenAI (and Anthropic)
// do on their side, done by the gateway under the guards of image-fetch.ts. A request's images are
// fetched a few at a time under one clock, each URL once, counted against a cap per image, per
// request, and the gateway's budget of memory held for request bodies (given back when the request
// ends). A failure is OpenAI's 400 naming the part, in OpenAI's words ("Error while downloading …",
// "Timeout while downloading …"); the client's own URL is the only address it names.
import type { Exchange } from '../../exchange/exchange.ts';
import type { JsonObject } from '../../http/body.ts';
import { budgetExhausted, type BodyBudget } from '../../http/body-policy.ts';
import { ApiError, clip } from '../../http/errors.ts';
import { PrivateHostAllowance } from './address-policy.ts';
import { FetchTimeout, fetchImage, guardedAgent, ImageFetchError, megabytes, type FetchedImage, type FetchTally } from './image-fetch.ts';
import type { Agent } from 'undici';

export interface RemoteImageSettings {
  /** TOLLGATE_FETCH_IMAGE_URLS: off keeps the provider's 400 for an http(s) image URL. */
  enabled: boolean;
  /** Host names and CIDR ranges that may be fetched from although not public (none by default). */
  privateHosts: string[];
  /** The whole of one request's fetches, redirects included; also each connect and each read. */
  timeoutMs: number;
  maxImageBytes: number;
  maxRequestBytes: number;
  maxImages: number;
}

/** One http(s) image part: where it is, and its URL. */
export interface RemotePart {
  message: number;
  part: number;
  url: string;
  /** The part's `image_url` was the URL itself (a string), not `{url}`. */
  bare: boolean;
}

/** Images fetched at once for one request. */
const PARALLEL = 4;
/**
 * Memory a fetched byte costs until the request ends, roughly: its base64 text in the inlined body
 * (4/3) and again in the provider's request text built from it (4/3).
 */
const HELD_PER_BYTE = 3;

/** The http(s) image parts of a chat body's user and tool messages (the only ones that carry images). */
export function remoteImageParts(json: JsonObject): RemotePart[] {
  const found: RemotePart[] = [];
  const messages = json.messages;
  if (!Array.isArray(messages)) return found;
  messages.forEach((message, i) => {
    const m = message as { role?: unknown; content?: unknown } | null;
    if (!m || (m.role !== 'user' && m.role !== 'tool') || !Array.isArray(m.content)) return;
    m.content.forEach((part, j) => {
      const p = part as { type?: unknown; image_url?: unknown } | null;
      if (p?.type !== 'image_url') return;
      const bare = typeof p.image_url === 'string';
      const url = bare ? (p.image_url as string) : (p.image_url as { url?: unknown } | null)?.url;
      if (typeof url === 'string' && /^https?:\/\//i.test(url)) found.push({ message: i, part: j, url, bare });
    });
  });
  return found;
}

export class RemoteImages {
  readonly settings: RemoteImageSettings;
  readonly #agent: Agent;
  #closing: Promise<void> | null = null;
  readonly #budget: BodyBudget | null;

  constructor(settings: RemoteImageSettings, budget: BodyBudget | null = null) {
    this.settings = settings;
    this.#agent = guardedAgent(new PrivateHostAllowance(settings.privateHosts), settings.timeoutMs);
    this.#budget = budget;
  }

  /** `json` with each of `parts` inlined as a data URL; the client's object is left as it was. Null: the client left. */
  async inline(exchange: Exchange, json: JsonObject, parts: RemotePart[]): Promise<JsonObject | null> {
    const { settings } = this;
    if (parts.length > settings.maxImages) {
      const extra = parts[settings.maxImages];
      throw new ApiError(400, 'too_many_images', `A request may name at most ${settings.maxImages} images by URL for this model; this one names ${parts.length}.`, { param: paramOf(extra) });
    }
    const started = performance.now();
    const clock = new AbortController();
    const timer = setTimeout(() => clock.abort(new FetchTimeout()), settings.timeoutMs);
    const signal = AbortSignal.any([exchange.signal, clock.signal]);
    const tally = this.#tally(exchange);
    const fetched = new Map<string, Promise<FetchedImage>>();
    const once = (url: string) => {
      let pending = fetched.get(url);
      if (!pending) fetched.set(url, (pending = fetchImage(this.#agent, url, settings, tally, signal)));
      return pending;
    };
    const images: FetchedImage[] = new Array(parts.length);
    let next = 0;
    let failure: { error: unknown; part: RemotePart } | null = null;
    const worker = async () => {
      while (next < parts.length && !failure) {
        const k = next++;
        const part = parts[k];
        try {
          images[k] = await once(part.url);
        } catch (error) {
          failure ??= { error, part };
          clock.abort(new Error('a sibling fetch failed'));
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL, parts.length) }, worker));
    } finally {
      clearTimeout(timer);
    }
    if (exchange.aborted) return null;
    // Set by the workers: TypeScript cannot see it through the closure.
    const failed = failure as { error: unknown; part: RemotePart } | null;
    if (failed) throw refusal(failed.error, failed.part, settings.maxRequestBytes);
    exchange.imageFetch = { images: fetched.size, bytes: tally.total, ms: Math.round(performance.now() - started) };
    return withDataURLs(json, parts, images);
  }

  /** Idempotent: a gateway stopped twice (a test's restart, then its clean-up) closes the agent once. */
  close(): Promise<void> {
    this.#closing ??= this.#agent.close();
    return this.#closing;
  }

  /** A request's count of fetched bytes, held from the gateway's memory budget until the request ends. */
  #tally(exchange: Exchange): FetchTally & { readonly total: number } {
    let total = 0;
    let held = 0;
    const budget = this.#budget;
    if (budget) exchange.onEnd(() => budget.give(held));
    return {
      get total() {
        return total;
      },
      take: (bytes) => {
        total += bytes;
        if (total > this.settings.maxRequestBytes) throw new ImageFetchError('request_too_large', 'request_too_large');
        if (!budget) return;
        if (!budget.tryTake(bytes * HELD_PER_BYTE)) throw budgetExhausted();
        held += bytes * HELD_PER_BYTE;
      },
    };
  }
}

function paramOf(part: RemotePart): string {
  return `messages[${part.message}].content[${part.part}].image_url${part.bare ? '' : '.url'}`;
}

/** The client's error for a part whose image could not be had. */
function refusal(error: unknown, part: RemotePart, maxRequestBytes: number): Error {
  if (error instanceof ApiError) return error;
  if (!(error instanceof ImageFetchError)) return error instanceof Error ? error : new Error(String(error));
  const param = paramOf(part);
  const url = clip(part.url, 300);
  if (error.failure === 'timeout') return new ApiError(400, 'invalid_image_url', `Timeout while downloading ${url}.`, { param });
  if (error.failure === 'request_too_large') return new ApiError(400, 'invalid_image_url', `Error while downloading ${url}: the images named by URL in this request add up to more than ${megabytes(maxRequestBytes)}.`, { param });
  const code = error.failure === 'not_image' ? 'invalid_image_format' : 'invalid_image_url';
  return new ApiError(400, code, `Error while downloading ${url}: ${error.message}.`, { param });
}

/** A copy of the body down the paths that change, each part's URL a data URL of its image. */
function withDataURLs(json: JsonObject, parts: RemotePart[], images: FetchedImage[]): JsonObject {
  const messages = [...(json.messages as unknown[])] as Array<{ content: unknown[] }>;
  const copied = new Set<number>();
  parts.forEach((part, k) => {
    if (!copied.has(part.message)) {
      messages[part.message] = { ...messages[part.message], content: [...messages[part.message].content] };
      copied.add(part.message);
    }
    const content = messages[part.message].content;
    const original = content[part.part] as { image_url: unknown };
    const url = `data:${images[k].mimeType};base64,${images[k].base64}`;
    content[part.part] = { ...original, image_url: part.bare ? url : { ...(original.image_url as object), url } };
  });
  return { ...json, messages };
}
