// Fetching one image a client named by URL, for a provider that takes only inline bytes. Every
// connection goes through a connector that checks the address actually connected to (the resolver's
// answers are filtered, an address literal is checked before connecting, and the socket's remote
// address once connected), so a name that resolves, or re-resolves, to an internal address is refused
// (address-policy.ts); each redirect is a new request under the same checks, at most MAX_REDIRECTS.
// One clock bounds the whole fetch and undici's own bound each read; the bytes are counted as they
// arrive, against the image's cap and the request's, and encoded to base64 as they arrive (in whole
// 3-byte groups), so no single step holds the event loop for a whole image. No cookie, credential or
// client header is sent: only a User-Agent that says who is fetching, and Accept.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request, errors as undiciErrors } from 'undici';
import { ApiError } from '../../http/errors.ts';
import { mayConnect, type PrivateHostAllowance } from './address-policy.ts';
import { ACCEPTED_HEADER_TYPES, sniffImageType, type ImageType } from './image-type.ts';

export const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'Tollgate-ImageFetcher/1 (fetches image_url parts for model providers that take inline images only)';

export type FetchFailure = 'timeout' | 'blocked_address' | 'unreachable' | 'http_status' | 'too_large' | 'request_too_large' | 'not_image' | 'redirects' | 'bad_url';

/** Why an image could not be fetched; `detail` is safe to show the client (it names no resolved address). */
export class ImageFetchError extends Error {
  readonly failure: FetchFailure;
  constructor(failure: FetchFailure, detail: string) {
    super(detail);
    this.failure = failure;
  }
}

/** The reason a fetch's own clock aborts it with (anything else aborting it is the client leaving). */
export class FetchTimeout extends Error {}

/** The connector's refusal: the host resolved only to addresses the gateway must not reach. */
class BlockedAddressError extends Error {
  readonly code = 'ERR_TOLLGATE_BLOCKED_ADDRESS';
}

export interface FetchedImage {
  mimeType: ImageType;
  base64: string;
  bytes: number;
}

/** What one request's fetches share: its byte total and its hold on the gateway's memory budget. */
export interface FetchTally {
  /** Called with each chunk's size before it is kept; throws an ImageFetchError past the request's cap. */
  take(bytes: number): void;
}

export interface ImageFetcherOptions {
  timeoutMs: number;
  maxImageBytes: number;
}

function guardedLookup(allowance: PrivateHostAllowance): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const usable = addresses.filter((entry) => mayConnect(hostname, entry.address, allowance));
      if (usable.length === 0) return callback(new BlockedAddressError(`${hostname} resolves to no public address`), '', 0);
      if (options.all) callback(null, usable);
      else callback(null, usable[0].address, usable[0].family);
    });
  }) as unknown as LookupFunction;
}

/** A dispatcher whose every connection is checked against the address policy. */
export function guardedAgent(allowance: PrivateHostAllowance, timeoutMs: number): Agent {
  const base = buildConnector({ timeout: timeoutMs, lookup: guardedLookup(allowance) } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    // An address literal is never looked up: checked here, before any packet leaves.
    if (isIP(host) && !mayConnect(host, host, allowance)) {
      callback(new BlockedAddressError('address not public'), null);
      return;
    }
    base(options, (error, socket) => {
      if (error) return callback(error, null);
      const remote = socket!.remoteAddress;
      if (!remote || !mayConnect(host, remote, allowance)) {
        socket!.destroy();
        return callback(new BlockedAddressError('address not public'), null);
      }
      callback(null, socket!);
    });
  };
  return new Agent({ connect, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connections: 16, keepAliveTimeout: 4_000 });
}

/**
 * Fetches `url` (http or https) with `agent` under `signal` (the whole fetch's clock and the client's
 * departure), following up to MAX_REDIRECTS redirects; the image's bytes as base64 with the type its
 * bytes show.
 */
export async function fetchImage(agent: Agent, url: string, options: ImageFetcherOptions, tally: FetchTally, signal: AbortSignal): Promise<FetchedImage> {
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new ImageFetchError('bad_url', 'it is not a valid URL');
  }
  for (let hop = 0; ; hop++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:') throw new ImageFetchError('bad_url', hop === 0 ? 'only http and https URLs are fetched' : 'a redirect led to a URL that is neither http nor https');
    if (current.username || current.password) throw new ImageFetchError('bad_url', 'URLs with credentials are not fetched');
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(current, { dispatcher: agent, method: 'GET', headers: { 'user-agent': USER_AGENT, accept: 'image/png,image/jpeg,image/gif,image/webp' }, signal });
    } catch (error) {
      throw failureOf(error, signal, hop > 0);
    }
    const status = response.statusCode;
    if (REDIRECTS.has(status)) {
      discard(response.body);
      const location = response.headers.location;
      if (typeof location !== 'string') throw new ImageFetchError('http_status', `the server answered ${status} without a Location`);
      if (hop >= MAX_REDIRECTS) throw new ImageFetchError('redirects', `more than ${MAX_REDIRECTS} redirects`);
      try {
        current = new URL(location, current);
      } catch {
        throw new ImageFetchError('bad_url', 'a redirect named an invalid URL');
      }
      continue;
    }
    if (status !== 200) {
      discard(response.body);
      throw new ImageFetchError('http_status', `the server answered ${status}`);
    }
    const declared = String(response.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (declared && !ACCEPTED_HEADER_TYPES.has(declared)) {
      discard(response.body);
      throw new ImageFetchError('not_image', `the server sent ${declared.slice(0, 60)}, not a png, jpeg, gif or webp image`);
    }
    const length = Number(response.headers['content-length']);
    if (Number.isFinite(length) && length > options.maxImageBytes) {
      discard(response.body);
      throw new ImageFetchError('too_large', `the image is larger than ${megabytes(options.maxImageBytes)}`);
    }
    return readImage(response.body, options.maxImageBytes, tally, signal);
  }
}

/** An answer's body let go unread: undici reports its destruction as an error, which nobody needs. */
function discard(body: { on(event: 'error', listener: () => void): unknown; destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

async function readImage(body: AsyncIterable<Buffer> & { on(event: 'error', listener: () => void): unknown; destroy(): void }, maxBytes: number, tally: FetchTally, signal: AbortSignal): Promise<FetchedImage> {
  const encoded: string[] = [];
  let carry = Buffer.alloc(0);
  let head: Buffer | null = Buffer.alloc(0);
  let type: ImageType | null = null;
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > maxBytes) throw new ImageFetchError('too_large', `the image is larger than ${megabytes(maxBytes)}`);
      tally.take(chunk.length);
      if (head) {
        // Judged by its first bytes as soon as there are enough: a page of HTML stops here.
        head = Buffer.concat([head, chunk.subarray(0, 16)]);
        if (head.length >= 12) {
          type = sniffImageType(head);
          if (!type) throw new ImageFetchError('not_image', 'its bytes are not a png, jpeg, gif or webp image');
          head = null;
        }
      }
      const data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      const whole = data.length - (data.length % 3);
      encoded.push(data.subarray(0, whole).toString('base64'));
      carry = Buffer.from(data.subarray(whole));
    }
  } catch (error) {
    discard(body);
    throw failureOf(error, signal, false);
  }
  if (head) type = sniffImageType(head);
  if (!type) throw new ImageFetchError('not_image', 'its bytes are not a png, jpeg, gif or webp image');
  encoded.push(carry.toString('base64'));
  return { mimeType: type, base64: encoded.join(''), bytes };
}

/** An error of the request or its body as the client may see it: never an address, never a stack. */
function failureOf(error: unknown, signal: AbortSignal, redirected: boolean): Error {
  // Ours (a cap) or the gateway's (its memory budget is spent: 503): as they are.
  if (error instanceof ImageFetchError || error instanceof ApiError) return error;
  // The whole fetch's clock ran out (FetchTimeout), or the client left: not the image's fault, the caller stops.
  if (signal.aborted) return signal.reason instanceof FetchTimeout ? new ImageFetchError('timeout', 'timeout') : new Error('aborted');
  if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError || error instanceof undiciErrors.ConnectTimeoutError) return new ImageFetchError('timeout', 'timeout');
  const code = (error as { code?: string }).code;
  if (error instanceof BlockedAddressError || code === 'ERR_TOLLGATE_BLOCKED_ADDRESS') {
    return new ImageFetchError('blocked_address', redirected ? 'a redirect led to an address the gateway does not fetch from (loopback, private, link-local or otherwise not public)' : 'the host is not on a public address (loopback, private, link-local and the like are not fetched)');
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new ImageFetchError('unreachable', 'the host name does not resolve');
  return new ImageFetchError('unreachable', 'the server could not be reached or broke off the transfer');
}

/** A byte cap as the client reads it: `20 MB`, `0.1 MB`. */
export function megabytes(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
}
