// A fake of Google's Gemini API (AI Studio) and Vertex AI for tests: a real HTTP server on port 0 that
// serves both surfaces' paths (generateContent, streamGenerateContent with and without alt=sse,
// batchEmbedContents / predict, countTokens, the model list), checks requests as Google does
// (gemini-validate.ts), authenticates as Google does (an API key header; a Bearer token minted by the
// fake's OAuth endpoint from a JWT assertion whose RS256 signature it verifies against the test's
// service-account public key), and answers deterministically from the request: text echoes the last
// user turn, tools are called with arguments made from their schemas, a structured output fills its
// schema. Tests script errors before and during a stream, and read the log of what it received.
// Claude on Vertex (`…/publishers/anthropic/models/…:rawPredict`) is served with Anthropic's semantics
// by a fake Anthropic the test starts and names in `claude` (vertex-claude.ts); Google's side (the
// token, a scripted Google `error`, which such a call takes only when it is next in line) stays here.
import { randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwtVerify } from 'jose';
import { answerFor, embed, tokensOf, type Answer } from './gemini-answers.ts';
import { FakeGoogleError, validateGenerate } from './gemini-validate.ts';
import { serveClaude, VERTEX_CLAUDE_PATH, type ClaudeBackend } from './vertex-claude.ts';

export interface GeminiScript {
  /** Answer with this Google error instead (status from the code; RetryInfo when retryDelay is set). */
  error?: { code: number; status: string; message?: string; retryDelay?: string; reason?: string; arrayWrapped?: boolean };
  /** Override the finish reason of the answer (MAX_TOKENS, SAFETY, …). */
  finishReason?: string;
  /** Block the prompt: no candidates, promptFeedback.blockReason. */
  blockReason?: string;
  /** Stream: send this many chunks, then end the body without the finishReason chunk. */
  cutAfterChunks?: number;
  /** Stream: send this many chunks, then an error object in the stream. */
  errorAfterChunks?: number;
  /** Report this many cached prompt tokens. */
  cachedTokens?: number;
}

export interface GeminiRequestRecord {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeGemini {
  url: string;
  /** The token endpoint a service-account key's `token_uri` names. */
  tokenUri: string;
  apiKey: string;
  requests: GeminiRequestRecord[];
  tokenRequests: number;
  /** Scripts consumed one per model call (generate, stream, embed), in order. */
  script(...next: GeminiScript[]): void;
  /** Make every token issued so far expired (as if an hour had passed). */
  expireTokens(): void;
  /** The next token request is refused with this OAuth error. */
  refuseNextToken(error: string, description: string): void;
  /** Accept a token issued elsewhere (a fake metadata server, STS) until `expiresAt` (epoch ms). */
  acceptToken(value: string, expiresAt: number): void;
  /** A valid access token, as the token endpoint would mint (for clients given a token directly, such as the Vertex SDKs). */
  issueToken(): string;
  close(): Promise<void>;
}

export interface FakeGeminiOptions {
  apiKey?: string;
  /** The service account's public key and email the token endpoint accepts assertions from. */
  serviceAccount?: { email: string; publicKey: KeyObject };
  tokenLifetimeSeconds?: number;
  /** The fake Anthropic that answers Claude on Vertex; without it, Claude models are not found. */
  claude?: ClaudeBackend;
}

const GEMINI_PATH = /^\/v1beta\/models\/([^/:]+):(\w+)$/;
const VERTEX_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(\w+)$/;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function googleErrorBody(error: FakeGoogleError, arrayWrapped = false): unknown {
  const body = { error: { code: error.code, message: error.message, status: error.status, ...(error.details.length > 0 ? { details: error.details } : {}) } };
  return arrayWrapped ? [body] : body;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeGemini(options: FakeGeminiOptions = {}): Promise<FakeGemini> {
  const apiKey = options.apiKey ?? `AIza${randomBytes(12).toString('hex')}`;
  const tokens = new Map<string, number>();
  const signatures = new Set<string>();
  const scripts: GeminiScript[] = [];
  let refuseToken: { error: string; description: string } | null = null;
  let served = 0;

  const fake = { url: '', tokenUri: '', apiKey, requests: [] as GeminiRequestRecord[], tokenRequests: 0 } as FakeGemini;

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    fake.tokenRequests++;
    const form = new URLSearchParams(await readBody(req));
    const refuse = (error: string, description: string) => sendJson(res, 400, { error, error_description: description });
    if (refuseToken) {
      const { error, description } = refuseToken;
      refuseToken = null;
      return refuse(error, description);
    }
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('unsupported_grant_type', 'Invalid grant_type: ' + form.get('grant_type'));
    const account = options.serviceAccount;
    if (!account) return refuse('invalid_grant', 'No service account configured.');
    try {
      const { payload, protectedHeader } = await jwtVerify(form.get('assertion') ?? '', account.publicKey, { audience: fake.tokenUri, issuer: account.email, algorithms: ['RS256'] });
      if (protectedHeader.typ !== 'JWT' || payload.sub !== account.email) return refuse('invalid_grant', 'Invalid JWT: subject.');
      if (payload.scope !== 'https://www.googleapis.com/auth/cloud-platform') return refuse('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
      if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number' || payload.exp - payload.iat > 3600) return refuse('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    } catch {
      return refuse('invalid_grant', 'Invalid JWT Signature.');
    }
    const lifetime = options.tokenLifetimeSeconds ?? 3599;
    const value = `ya29.fake-${randomBytes(16).toString('hex')}`;
    tokens.set(value, Date.now() + lifetime * 1000);
    sendJson(res, 200, { access_token: value, expires_in: lifetime, token_type: 'Bearer' });
  }

  function authenticate(req: IncomingMessage, url: URL, vertex: boolean): void {
    if (!vertex) {
      const key = req.headers['x-goog-api-key'] ?? url.searchParams.get('key');
      if (!key) throw new FakeGoogleError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
      if (key !== apiKey) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }]);
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const expiresAt = bearer ? tokens.get(bearer) : undefined;
    const unauthenticated = (reason: string) =>
      new FakeGoogleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.', [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com', metadata: { service: 'aiplatform.googleapis.com' } },
      ]);
    if (expiresAt === undefined) throw unauthenticated('CREDENTIALS_MISSING');
    if (expiresAt <= Date.now()) throw unauthenticated('ACCESS_TOKEN_EXPIRED');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'POST' && url.pathname === '/token') return token(req, res);
    const text = await readBody(req);
    let body: any = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      throw new FakeGoogleError(400, 'INVALID_ARGUMENT', `Invalid JSON payload received. Unexpected token.\n${text.slice(0, 20)}\n^`);
    }
    fake.requests.push({ method: req.method ?? '', path: url.pathname + url.search, headers: req.headers, body });

    if (req.method === 'GET' && url.pathname === '/v1beta/models') {
      authenticate(req, url, false);
      const all = ['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-3-pro-preview', 'gemini-embedding-001'];
      const size = Number(url.searchParams.get('pageSize') ?? 50);
      return sendJson(res, 200, { models: all.slice(0, size).map((name) => ({ name: `models/${name}`, displayName: name, supportedGenerationMethods: ['generateContent'] })), ...(size < all.length ? { nextPageToken: 'next' } : {}) });
    }
    const claude = VERTEX_CLAUDE_PATH.exec(url.pathname);
    if (claude && req.method === 'POST') {
      authenticate(req, url, true);
      if (scripts[0]?.error) {
        const { code, status, message, retryDelay } = scripts.shift()!.error!;
        const details = retryDelay ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }] : [];
        return sendJson(res, code, googleErrorBody(new FakeGoogleError(code, status, message ?? `Scripted ${status}.`, details)));
      }
      return serveClaude(req, res, claude, body, options.claude);
    }
    const gemini = GEMINI_PATH.exec(url.pathname);
    const vertexMatch = VERTEX_PATH.exec(url.pathname);
    if (req.method !== 'POST' || (!gemini && !vertexMatch)) throw new FakeGoogleError(404, 'NOT_FOUND', `The requested URL ${url.pathname} was not found on this server.`);
    const vertex = !!vertexMatch;
    const model = decodeURIComponent(gemini ? gemini[1] : vertexMatch![3]);
    const method = gemini ? gemini[2] : vertexMatch![4];
    authenticate(req, url, vertex);
    if (model.startsWith('missing')) throw new FakeGoogleError(404, 'NOT_FOUND', `models/${model} is not found for API version v1beta, or is not supported for generateContent.`);

    if (method === 'countTokens') return sendJson(res, 200, { totalTokens: tokensOf(JSON.stringify(body?.contents ?? [])) });
    const script = scripts.shift() ?? {};
    if (script.error) {
      const { code, status, message, retryDelay, reason, arrayWrapped } = script.error;
      const details = [
        ...(retryDelay ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }] : []),
        ...(reason ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] : []),
      ];
      return sendJson(res, code, googleErrorBody(new FakeGoogleError(code, status, message ?? `Scripted ${status}.`, details), arrayWrapped));
    }
    if (method === 'batchEmbedContents' && !vertex) {
      if (!Array.isArray(body?.requests) || body.requests.length === 0) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: requests is not specified\n');
      if (body.requests.length > 100) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', '* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch.\n');
      for (const request of body.requests) if (request.model !== `models/${model}`) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', `Model names in the requests (${request.model}) must match the model of the batch (models/${model}).`);
      return sendJson(res, 200, { embeddings: body.requests.map((request: any) => ({ values: embed(request.content.parts.map((p: any) => p.text).join(''), request.outputDimensionality) })) });
    }
    if (method === 'predict' && vertex) {
      const instances: any[] = body?.instances ?? [];
      if (instances.length === 0) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', 'instances must not be empty.');
      if (/gemini-embedding/.test(model) && instances.length > 1) throw new FakeGoogleError(400, 'INVALID_ARGUMENT', `Unable to submit request because the model ${model} only supports 1 instance per request.`);
      return sendJson(res, 200, { predictions: instances.map((instance) => ({ embeddings: { values: embed(instance.content, body.parameters?.outputDimensionality), statistics: { token_count: tokensOf(instance.content), truncated: false } } })) });
    }
    if (method !== 'generateContent' && method !== 'streamGenerateContent') throw new FakeGoogleError(404, 'NOT_FOUND', `Method ${method} is not found.`);

    validateGenerate(body, { vertex, model, signatures });
    const answer = answerFor(body, model, script, signatures, `resp-${++served}-${randomBytes(4).toString('hex')}`);
    if (method === 'generateContent') return sendJson(res, 200, answer.whole);
    return stream(res, answer, script, url.searchParams.get('alt') === 'sse');
  }

  function stream(res: ServerResponse, answer: Answer, script: GeminiScript, sse: boolean): void {
    res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8' });
    const chunks = answer.chunks;
    const limit = script.cutAfterChunks ?? script.errorAfterChunks ?? chunks.length;
    const sent = chunks.slice(0, limit);
    if (script.errorAfterChunks !== undefined) sent.push({ error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } });
    if (sse) {
      for (const chunk of sent) res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    } else {
      // Without alt=sse the stream is one JSON array, written as its elements are ready.
      res.write('[');
      sent.forEach((chunk, i) => res.write(`${i > 0 ? ',\r\n' : ''}${JSON.stringify(chunk)}`));
      if (script.cutAfterChunks === undefined) res.write(']');
    }
    res.end();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (error instanceof FakeGoogleError) sendJson(res, error.code, googleErrorBody(error));
      else sendJson(res, 500, { error: { code: 500, message: String(error), status: 'INTERNAL' } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.tokenUri = `${fake.url}/token`;
  fake.script = (...next) => void scripts.push(...next);
  fake.expireTokens = () => {
    for (const key of tokens.keys()) tokens.set(key, 0);
  };
  fake.acceptToken = (value, expiresAt) => void tokens.set(value, expiresAt);
  fake.refuseNextToken = (error, description) => {
    refuseToken = { error, description };
  };
  fake.issueToken = () => {
    const value = `ya29.fake-${randomBytes(16).toString('hex')}`;
    tokens.set(value, Date.now() + (options.tokenLifetimeSeconds ?? 3599) * 1000);
    return value;
  };
  fake.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return fake;
}
