// A fake Amazon Bedrock runtime for tests: a real HTTP server on port 0 that checks SigV4 for real
// (the signature recomputed with its own secret: scope service `bedrock`, double-encoded canonical
// URI, a stale x-amz-date refused), validates Converse requests as strictly as AWS
// (bedrock-validate.ts: cache points and thinking per model included), caches repeated prompt prefixes
// and reports them in usage (bedrock-cache.ts), and answers in AWS's wire formats: Converse JSON, ConverseStream binary
// event-stream frames (CRCs, `:message-type`, padding field `p`), InvokeModel for Titan and Cohere
// embeddings, and ListAsyncInvokes for the probe. A per-test script injects errors before and during a
// stream, cut streams, corrupt frames and byte-by-byte writes; every request is logged.
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { encodeMessage } from '../../gateway/src/providers/bedrock/frames.ts';
import { answerFor, converseBody, streamEvents, type Answer } from './bedrock-answers.ts';
import { validateConverse, ValidationError } from './bedrock-validate.ts';
import { FakePromptCache } from './bedrock-cache.ts';

export const FAKE_ACCESS_KEY = 'AKIAFAKEBEDROCK00001';
export const FAKE_SECRET_KEY = 'fake/bedrock+secret/Key0000000000000000000';

export interface BedrockBehaviour {
  /** Answer with this AWS error before anything else. */
  error?: { status: number; type: string; message?: string; headers?: Record<string, string> };
  /** Stream: after this many events, send an exception frame (`throttlingException`, `modelStreamErrorException`, …). */
  streamException?: { afterEvents: number; type: string; message?: string };
  /** Stream: after this many events, send an `error` frame (`:message-type: error`). */
  streamError?: { afterEvents: number; code: string; message: string };
  /** Stream: end the body after this many events (no messageStop). */
  truncateAfterEvents?: number;
  /** Stream: corrupt the message CRC of this event. */
  corruptEvent?: number;
  /** Stream: write every byte of the body on its own. */
  byteByByte?: boolean;
  /** Overrides of the planned answer. */
  text?: string;
  stopReason?: string;
  usage?: Partial<Answer['usage']>;
}

export interface BedrockRequestLog {
  method: string;
  /** The path as it arrived on the wire (`%3A` still encoded). */
  rawPath: string;
  operation: string;
  modelId?: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The SigV4 check's verdict: null when it passed, else AWS's error type. */
  refused: string | null;
}

export interface FakeBedrock {
  url: string;
  region: string;
  requests: BedrockRequestLog[];
  /** Behaviour of the next requests, in order (each used once). */
  next(...behaviours: BedrockBehaviour[]): void;
  /** Session credentials: a request must then carry this x-amz-security-token. */
  sessionToken?: string;
  /** Session tokens past their expiry: a request signed with one is refused as AWS does (403 ExpiredTokenException). */
  expiredSessionTokens: Set<string>;
  close(): Promise<void>;
}

const SKEW_MS = 5 * 60 * 1000;
const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;

function sendError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-requestid': randomUUID(),
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    ...headers,
  });
  res.end(JSON.stringify({ message }));
}

function parseAmzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

/** Recomputes the request's signature; returns [errorType, message] when AWS would refuse it. */
async function checkSignature(req: IncomingMessage, body: Buffer, region: string, sessionToken: string | undefined, expired: Set<string>): Promise<[string, string] | null> {
  const match = AUTH.exec(String(req.headers.authorization ?? ''));
  if (!match) return ['MissingAuthenticationTokenException', 'Missing Authentication Token'];
  const [, accessKey, day, scopeRegion, service, signedList, signature] = match;
  if (accessKey !== FAKE_ACCESS_KEY) return ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
  if (service !== 'bedrock') return ['InvalidSignatureException', `Credential should be scoped to correct service: 'bedrock'.`];
  if (scopeRegion !== region) return ['InvalidSignatureException', `Credential should be scoped to a valid region, not '${scopeRegion}'.`];
  const date = parseAmzDate(String(req.headers['x-amz-date'] ?? ''));
  if (!date || !signedList.split(';').includes('x-amz-date')) return ['IncompleteSignatureException', 'Authorization header requires a signed x-amz-date header.'];
  if (Math.abs(Date.now() - date.getTime()) > SKEW_MS) {
    return ['InvalidSignatureException', `Signature expired: ${req.headers['x-amz-date']} is now earlier than the allowed window (5 minutes).`];
  }
  if (!day || !String(req.headers['x-amz-date']).startsWith(day)) return ['InvalidSignatureException', 'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.'];
  if (expired.has(String(req.headers['x-amz-security-token']))) return ['ExpiredTokenException', 'The security token included in the request is expired'];
  if (sessionToken !== undefined && req.headers['x-amz-security-token'] !== sessionToken) return ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
  // The signer takes a sent x-amz-content-sha256 as the body's hash: check it is the body's.
  const bodyHash = createHash('sha256').update(body).digest('hex');
  if (req.headers['x-amz-content-sha256'] !== undefined && req.headers['x-amz-content-sha256'] !== bodyHash) {
    return ['InvalidSignatureException', "The provided 'x-amz-content-sha256' header does not match what was computed."];
  }
  const headers: Record<string, string> = {};
  for (const name of signedList.split(';')) headers[name] = String(req.headers[name] ?? '');
  const url = new URL(req.url ?? '/', 'http://fake');
  const rawPath = (req.url ?? '/').split('?')[0];
  const signer = new SignatureV4({ service: 'bedrock', region, credentials: { accessKeyId: accessKey, secretAccessKey: FAKE_SECRET_KEY, sessionToken }, sha256: Sha256 });
  const signed = await signer.sign(
    { method: req.method ?? 'GET', protocol: 'http:', hostname: headers.host ?? '', path: rawPath, query: Object.fromEntries(url.searchParams), headers, body: body.length > 0 ? body : undefined },
    { signingDate: date },
  );
  const expected = /Signature=([0-9a-f]+)/.exec(String(signed.headers.authorization))?.[1];
  if (expected !== signature) {
    // AWS quotes the canonical request it expected: the gateway must never pass this text to a client.
    return ['InvalidSignatureException', `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\nThe Canonical String for this request should have been\n'${req.method}\n${rawPath}\n...'\n`];
  }
  return null;
}

function padding(): string {
  return 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123'.slice(0, 1 + Math.floor(Math.random() * 40));
}

function eventFrame(type: string, payload: Record<string, unknown>): Buffer {
  return encodeMessage({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, { ...payload, p: padding() });
}

async function writeStream(res: ServerResponse, answer: Answer, behaviour: BedrockBehaviour): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': randomUUID() });
  const frames: Buffer[] = [];
  const events = streamEvents(answer);
  for (let i = 0; i <= events.length; i++) {
    if (behaviour.streamException?.afterEvents === i) {
      const { type, message = `injected ${type}` } = behaviour.streamException;
      frames.push(encodeMessage({ ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' }, { message }));
      break;
    }
    if (behaviour.streamError?.afterEvents === i) {
      frames.push(encodeMessage({ ':error-code': behaviour.streamError.code, ':error-message': behaviour.streamError.message, ':message-type': 'error' }, undefined));
      break;
    }
    if (behaviour.truncateAfterEvents === i || i === events.length) break;
    const frame = eventFrame(...events[i]);
    if (behaviour.corruptEvent === i) frame[frame.length - 1] ^= 0xff;
    frames.push(frame);
  }
  const body = Buffer.concat(frames);
  if (!behaviour.byteByByte) {
    res.end(body);
    return;
  }
  for (let i = 0; i < body.length; i++) {
    if (!res.write(body.subarray(i, i + 1))) await new Promise((resolve) => res.once('drain', resolve));
    // Yield so each byte goes out in its own TCP write rather than coalesced in one buffer.
    if (i % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  res.end();
}

function embeddingsAnswer(modelId: string, body: any): Record<string, unknown> {
  const vector = (text: string, n: number) => Array.from({ length: n }, (_, i) => Number((((text.length + i) % 7) / 10 - 0.3).toFixed(3)));
  if (modelId.startsWith('amazon.titan-embed-text')) {
    if (typeof body?.inputText !== 'string' || body.inputText === '') throw new ValidationError('Malformed input request: #: required key [inputText] not found');
    const dims = body.dimensions ?? 1024;
    if (![256, 512, 1024].includes(dims)) throw new ValidationError('Malformed input request: #/dimensions: 8 is not a valid enum value');
    return { embedding: vector(body.inputText, dims), inputTextTokenCount: body.inputText.split(/\s+/).filter(Boolean).length };
  }
  if (modelId.startsWith('cohere.embed')) {
    if (!Array.isArray(body?.texts) || body.texts.length === 0 || body.texts.length > 96) throw new ValidationError('Malformed input request: texts must have 1 to 96 items');
    if (!['search_document', 'search_query', 'classification', 'clustering'].includes(body.input_type)) throw new ValidationError('Malformed input request: #: required key [input_type] not found');
    const vectors = body.texts.map((t: string) => vector(t, body.output_dimension ?? 1024));
    return { id: randomUUID(), response_type: 'embeddings_by_type', texts: body.texts, embeddings: { float: vectors } };
  }
  throw new ValidationError(`The provided model identifier is invalid: ${modelId}`);
}

export async function startFakeBedrock(options: { region?: string; sessionToken?: string } = {}): Promise<FakeBedrock> {
  const region = options.region ?? 'us-east-1';
  const queue: BedrockBehaviour[] = [];
  const requests: BedrockRequestLog[] = [];
  const cache = new FakePromptCache();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const rawPath = (req.url ?? '/').split('?')[0];
    const route = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(rawPath);
    const operation = route ? route[2] : req.method === 'GET' && rawPath === '/async-invoke' ? 'list-async-invokes' : 'unknown';
    let body: any;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = raw.toString('utf8');
    }
    const refusal = await checkSignature(req, raw, region, fake.sessionToken, fake.expiredSessionTokens);
    const entry: BedrockRequestLog = { method: req.method ?? '', rawPath, operation, modelId: route ? decodeURIComponent(route[1]) : undefined, headers: req.headers, body, refused: refusal?.[0] ?? null };
    requests.push(entry);
    if (refusal) return sendError(res, 403, refusal[0], refusal[1]);
    const behaviour = queue.shift() ?? {};
    if (behaviour.error) {
      const { status, type, message = `injected ${type}`, headers } = behaviour.error;
      return sendError(res, status, type, message, headers);
    }
    try {
      if (operation === 'list-async-invokes') return void res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() }).end(JSON.stringify({ asyncInvokeSummaries: [] }));
      if (!route || req.method !== 'POST') return sendError(res, 404, 'UnknownOperationException', `No operation at ${req.method} ${rawPath}`);
      const modelId = entry.modelId as string;
      if (modelId.startsWith('missing.')) return sendError(res, 404, 'ResourceNotFoundException', 'Could not resolve the foundation model from the provided model identifier.');
      if (operation === 'invoke') {
        return void res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() }).end(JSON.stringify(embeddingsAnswer(modelId, body)));
      }
      validateConverse(body, modelId);
      const cached = cache.account(body, modelId);
      const answer = answerFor(body, cached ? { ...behaviour, usage: { ...cached, ...behaviour.usage } } : behaviour);
      if (operation === 'converse') {
        return void res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() }).end(JSON.stringify(converseBody(answer)));
      }
      await writeStream(res, answer, behaviour);
    } catch (err) {
      if (err instanceof ValidationError) return sendError(res, 400, 'ValidationException', err.message);
      sendError(res, 500, 'InternalServerException', (err as Error).message);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeBedrock = {
    url: `http://127.0.0.1:${port}`,
    region,
    requests,
    sessionToken: options.sessionToken,
    expiredSessionTokens: new Set(),
    next: (...behaviours) => void queue.push(...behaviours),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
