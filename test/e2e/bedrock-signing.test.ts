// The Bedrock provider module against the fake Bedrock over real HTTP, before the gateway's wiring:
// its SigV4 (scope service bedrock, the model id's `:` double-encoded in the canonical URI), its
// requests (which the fake validates as AWS does) and its translators on real answers.
import type { CredentialRef, Upstream } from '@tollgate/crds';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ProviderAuthError } from '../../gateway/src/providers/auth.ts';
import { bedrock } from '../../gateway/src/providers/bedrock/index.ts';
import { BedrockAuth } from '../../gateway/src/providers/bedrock/auth.ts';
import type { ProviderRequest } from '../../gateway/src/providers/provider.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const ENV: Record<string, string> = { AWS_TEST_KEY: FAKE_ACCESS_KEY, AWS_TEST_SECRET: FAKE_SECRET_KEY, AWS_TEST_TOKEN: 'session-token-1', AWS_WRONG_SECRET: 'not-the-secret' };
const read = (ref: CredentialRef) => ('env' in ref ? ENV[ref.env] : undefined);
let fake: FakeBedrock;

function upstream(bedrockSpec: Record<string, unknown> = {}): Upstream {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Upstream',
    metadata: { name: 'aws' },
    spec: { provider: 'bedrock', baseURL: fake.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'AWS_TEST_KEY' }, secretAccessKey: { env: 'AWS_TEST_SECRET' }, ...bedrockSpec } },
  } as Upstream;
}

async function send(request: ProviderRequest, target: Upstream, auth = bedrock.auth, extraHeaders: Record<string, string> = {}) {
  const url = new URL(request.path, fake.url);
  const headers = { ...request.headers, ...(await auth.authorize(request, { upstream: target, url }, read, AbortSignal.timeout(5000))), ...extraHeaders };
  return fetch(url, { method: request.method, headers, body: request.method === 'POST' ? request.body : undefined });
}

const answerCtx = (headers: Headers) => ({ publicModel: 'claude', providerModel: CLAUDE, requestId: 'gw-1', created: 1, includeUsage: true, responseHeaders: Object.fromEntries(headers) });

beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterAll(async () => {
  await fake.close();
});

describe('Bedrock provider against the fake Bedrock', () => {
  it('signs a Converse call the fake verifies, and translates its answer', async () => {
    const target = upstream();
    const request = bedrock.translation.chatRequest({ messages: [{ role: 'system', content: 'terse' }, { role: 'user', content: 'hello world' }] }, { model: CLAUDE, upstream: target }, false);
    const response = await send(request, target, bedrock.auth, { 'x-forwarded-for': '10.0.0.1', 'user-agent': 'changed-by-a-proxy' });
    expect(response.status).toBe(200);
    expect(fake.requests.at(-1)).toMatchObject({ rawPath: '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse', refused: null });
    expect(fake.requests.at(-1)!.headers.authorization).toMatch(/Credential=AKIAFAKEBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date,/);
    const answer = bedrock.translation.chatResponse(await response.json(), answerCtx(response.headers)) as any;
    expect(answer.choices[0].message.content).toBe('You said: hello world');
    expect(answer.id).toBe(`chatcmpl-${response.headers.get('x-amzn-requestid')}`);
    expect(answer.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
  });

  it('signs an ARN model id (with `/`) and a session token', async () => {
    fake.sessionToken = 'session-token-1';
    try {
      const target = upstream({ sessionToken: { env: 'AWS_TEST_TOKEN' } });
      const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20241022-v2:0';
      const request = bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: arn, upstream: target }, false);
      expect((await send(request, target)).status).toBe(200);
      expect(fake.requests.at(-1)!.modelId).toBe(arn);
      expect(bedrock.auth.secrets!(target, read)).toEqual([FAKE_SECRET_KEY, 'session-token-1']);
    } finally {
      fake.sessionToken = undefined;
    }
  });

  it('a wrong secret is refused by the fake and translated as the gateway’s credential, without the canonical request', async () => {
    const target = upstream({ secretAccessKey: { env: 'AWS_WRONG_SECRET' } });
    const response = await send(bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: CLAUDE, upstream: target }, false), target);
    const text = await response.text();
    expect(text).toMatch(/Canonical String/);
    const translated = bedrock.translation.error(response.status, Object.fromEntries(response.headers), text);
    expect(translated).toMatchObject({ status: 502, credentialRefused: true });
    expect(translated.message).not.toMatch(/Canonical|\/model\//);
  });

  it('a body changed after signing is refused', async () => {
    const target = upstream();
    const request = bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: CLAUDE, upstream: target }, false);
    const headers = await bedrock.auth.authorize(request, { upstream: target, url: new URL(request.path, fake.url) }, read, AbortSignal.timeout(5000));
    const response = await fetch(new URL(request.path, fake.url), { method: 'POST', headers: { ...request.headers, ...headers }, body: request.body.replace('hi', 'ho') });
    expect(response.status).toBe(403);
    expect(response.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException:/);
  });

  it('a signature older than five minutes is refused', async () => {
    const target = upstream();
    const request = bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: CLAUDE, upstream: target }, false);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 6 * 60 * 1000 });
    let headers: Record<string, string>;
    try {
      headers = await bedrock.auth.authorize(request, { upstream: target, url: new URL(request.path, fake.url) }, read, AbortSignal.timeout(5000));
    } finally {
      vi.useRealTimers();
    }
    const response = await fetch(new URL(request.path, fake.url), { method: 'POST', headers: { ...request.headers, ...headers }, body: request.body });
    expect(response.status).toBe(403);
    expect((await response.json()).message).toMatch(/Signature expired/);
  });

  it('streams a tool call through the translator, the fake writing byte by byte', async () => {
    fake.next({ byteByByte: true });
    const target = upstream();
    const body = { messages: [{ role: 'user', content: 'please call get_time' }], tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } }] };
    const response = await send(bedrock.translation.chatRequest(body, { model: CLAUDE, upstream: target }, true), target);
    expect(response.headers.get('content-type')).toBe('application/vnd.amazon.eventstream');
    const translator = bedrock.translation.chatStream(answerCtx(response.headers));
    let sse = '';
    let reads = 0;
    for await (const chunk of response.body!) {
      reads++;
      sse += translator.feed(Buffer.from(chunk));
    }
    sse += translator.end();
    expect(reads).toBeGreaterThan(10);
    const calls = sse.split('\n\n').filter((f) => f.startsWith('data: {')).flatMap((f) => JSON.parse(f.slice(6)).choices[0]?.delta?.tool_calls ?? []);
    expect(calls).toEqual([
      { index: 0, id: expect.stringMatching(/^tooluse_/), type: 'function', function: { name: 'get_time', arguments: '' } },
      { index: 0, function: { arguments: '{}' } },
    ]);
    expect(translator.finishReason()).toBe('tool_calls');
    expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('runs a tool loop to completion with a dotted tool name: the fake accepts each turn', async () => {
    const target = upstream();
    const tools = [{ type: 'function', function: { name: 'weather.get', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const messages: any[] = [{ role: 'user', content: 'Oslo' }];
    const first = await send(bedrock.translation.chatRequest({ messages, tools, tool_choice: 'required' }, { model: CLAUDE, upstream: target }, false), target);
    expect(first.status).toBe(200);
    const turn = bedrock.translation.chatResponse(await first.json(), answerCtx(first.headers)) as any;
    expect(turn.choices[0].finish_reason).toBe('tool_calls');
    const call = turn.choices[0].message.tool_calls[0];
    expect(call.function.name).toBe('weather.get');
    messages.push(turn.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'rain, 4°C' });
    const second = await send(bedrock.translation.chatRequest({ messages, tools }, { model: CLAUDE, upstream: target }, false), target);
    expect(second.status).toBe(200);
    const done = bedrock.translation.chatResponse(await second.json(), answerCtx(second.headers)) as any;
    expect(done.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Tool results: rain, 4°C' } });
  });

  it('sends an image and a structured-output request the fake accepts and answers', async () => {
    const target = upstream();
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const vision = await send(bedrock.translation.chatRequest({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] }, { model: CLAUDE, upstream: target }, false), target);
    expect((bedrock.translation.chatResponse(await vision.json(), answerCtx(vision.headers)) as any).choices[0].message.content).toBe('You said: what is this [images: png 8 bytes]');
    const schema = { type: 'object', properties: { city: { type: 'string' }, population: { type: 'integer' } } };
    const structured = await send(bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'Oslo' }], response_format: { type: 'json_schema', json_schema: { name: 'city', schema } } }, { model: CLAUDE, upstream: target }, false), target);
    expect(JSON.parse((bedrock.translation.chatResponse(await structured.json(), answerCtx(structured.headers)) as any).choices[0].message.content)).toEqual({ city: 'Oslo', population: 4 });
  });

  it('a request Bedrock refuses comes back as a 400 with its message', async () => {
    const target = upstream();
    const request = bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: CLAUDE, upstream: target }, false);
    // Tamper after translation (as a bug would): a blank text block, signed as sent.
    const tampered = { ...request, body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: ' ' }] }] }) };
    const response = await send(tampered, target);
    const translated = bedrock.translation.error(response.status, Object.fromEntries(response.headers), await response.text());
    expect(translated).toMatchObject({ status: 400, type: 'invalid_request_error' });
    expect(translated.message).toMatch(/blank.*\(ValidationException\)$/s);
  });

  it('embeds through Titan (fanned out) and Cohere, signed', async () => {
    const target = upstream();
    const titan = bedrock.translation.embeddings!.requests({ input: ['one two', 'three'], dimensions: 256 }, { model: 'amazon.titan-embed-text-v2:0', upstream: target });
    const answers = await Promise.all(titan.map(async (r) => (await send(r, target)).json()));
    const out = bedrock.translation.embeddings!.response(answers, { encoding_format: 'base64' }, answerCtx(new Headers())) as any;
    expect(out.data).toHaveLength(2);
    expect(Buffer.from(out.data[1].embedding, 'base64')).toHaveLength(256 * 4);
    expect(out.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const [cohere] = bedrock.translation.embeddings!.requests({ input: ['a', 'b', 'c'] }, { model: 'cohere.embed-english-v3', upstream: target });
    const response = await send(cohere, target);
    expect(response.status).toBe(200);
    expect(bedrock.translation.embeddings!.response([await response.json()], {}, answerCtx(response.headers)).data).toHaveLength(3);
  });

  it('probes with a signed ListAsyncInvokes', async () => {
    const target = upstream();
    const response = await send(bedrock.translation.probe(target), target);
    expect(response.status).toBe(200);
    expect(fake.requests.at(-1)).toMatchObject({ operation: 'list-async-invokes', refused: null });
  });

  it('a credential chain that finds nothing is a ProviderAuthError naming the problem', async () => {
    const auth = new BedrockAuth(() => async () => {
      throw new Error('Could not load credentials from any providers');
    });
    const target = upstream({ accessKeyId: undefined, secretAccessKey: undefined });
    const request = bedrock.translation.probe(target);
    const error = await auth.authorize(request, { upstream: target, url: new URL(request.path, fake.url) }, read, AbortSignal.timeout(5000)).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderAuthError);
    expect(error.message).toMatch(/AWS credential chain found no credentials \(Could not load credentials/);
  });

  it('chain credentials are fetched once, and afresh after Bedrock refused them', async () => {
    const calls: boolean[] = [];
    const auth = new BedrockAuth(() => async (options?: { forceRefresh?: boolean }) => {
      calls.push(options?.forceRefresh ?? false);
      return { accessKeyId: FAKE_ACCESS_KEY, secretAccessKey: FAKE_SECRET_KEY };
    });
    const target = upstream({ accessKeyId: undefined, secretAccessKey: undefined });
    const request = bedrock.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: CLAUDE, upstream: target }, false);
    expect((await send(request, target, auth)).status).toBe(200);
    const expired = { headers: { 'x-amzn-errortype': 'ExpiredTokenException:http://internal.amazon.com/coral/com.amazon.coral.service/' }, text: '{"message":"The security token included in the request is expired"}' };
    // A missing permission is not mended by fresh credentials: no refresh.
    expect(auth.refused(target, 403, { headers: { 'x-amzn-errortype': 'AccessDeniedException:' }, text: '{"message":"not authorized"}' })).toBe(false);
    expect(auth.refused(target, 403, expired)).toBe(true);
    expect((await send(request, target, auth)).status).toBe(200);
    expect(calls).toEqual([false, true]);
    expect(auth.refused(upstream(), 403, expired)).toBe(false);
  });

  it('a missing static key is a ProviderAuthError naming the variable', async () => {
    const target = upstream({ secretAccessKey: { env: 'AWS_NOT_SET' } });
    const request = bedrock.translation.probe(target);
    const error = await bedrock.auth.authorize(request, { upstream: target, url: new URL(request.path, fake.url) }, read, AbortSignal.timeout(5000)).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderAuthError);
    expect(error.message).toMatch(/bedrock.secretAccessKey is not set \(environment variable AWS_NOT_SET/);
  });
});
