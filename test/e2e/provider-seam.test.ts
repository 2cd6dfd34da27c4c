// The seam every translated provider plugs into (providers/provider.ts), proven with a small provider
// of this test's own ("toy": a made-up dialect on a local server), so that what the gateway does around
// a translation — the attempt's request and credential, errors deciding fallback, JSON and stream
// relays, in-band stream errors, token refresh, embeddings in several calls, operations a provider
// cannot do — is checked apart from any one provider's mapping. The real providers' suites
// (provider-<name>.test.ts) check their mappings against faithful fakes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { ProviderAuthError, type ProviderAuth } from '../../gateway/src/providers/auth.ts';
import { ProviderStreamError, type ChatStreamTranslator, type ProviderModule, type ProviderTranslation } from '../../gateway/src/providers/provider.ts';
import { ApiError } from '../../gateway/src/http/errors.ts';

const API = 'tollgate.dev/v1alpha1';
const TOY_KEY = 'toy-secret-key-0123456789abcdef';
process.env.TOY_KEY = TOY_KEY;
process.env.TEST_UPSTREAM_KEY = 'sk-openai-fallback-0123456789';
const key = newKey('k', 'acme');

/** The toy dialect: POST /toy/{model}/say {"said": [...texts], "stream": bool} → {"reply", "used": {"in","out"}}; streams as `event: piece` lines. */
interface ToyScript {
  status?: number;
  body?: string;
  /** Stream: pieces, then `done` unless cut. */
  cut?: boolean;
  failInStream?: string;
}

function toyTranslation(): ProviderTranslation {
  const usage = (used: { in: number; out: number }) => ({ prompt_tokens: used.in, completion_tokens: used.out, total_tokens: used.in + used.out });
  return {
    name: 'anthropic',
    semconvName: 'anthropic',
    defaultBaseURL: () => 'https://toy.invalid',
    chatRequest(body, ctx, stream) {
      if (typeof body.n === 'number' && body.n > 1) throw new ApiError(400, 'unsupported_parameter', 'The toy provider answers one choice.', { param: 'n' });
      const said = (body.messages as Array<{ content: string }>).map((m) => m.content);
      return { path: `/toy/${encodeURIComponent(ctx.model)}/say`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ said, stream }) };
    },
    chatResponse(json, ctx) {
      const answer = json as { reply: string; used: { in: number; out: number } };
      return { id: `chatcmpl-${ctx.requestId}`, object: 'chat.completion', created: ctx.created, model: ctx.publicModel, choices: [{ index: 0, message: { role: 'assistant', content: answer.reply, refusal: null }, finish_reason: 'stop', logprobs: null }], usage: usage(answer.used) };
    },
    chatStream(ctx): ChatStreamTranslator {
      let buffered = '';
      let done = false;
      let used: { in: number; out: number } | null = null;
      const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: `chatcmpl-${ctx.requestId}`, object: 'chat.completion.chunk', created: ctx.created, model: ctx.publicModel, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
      return {
        feed(bytes) {
          buffered += bytes.toString('utf8');
          let out = '';
          let end: number;
          while ((end = buffered.indexOf('\n')) !== -1) {
            const line = buffered.slice(0, end);
            buffered = buffered.slice(end + 1);
            const [kind, text] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
            if (kind === 'piece') out += chunk({ content: text }, null);
            if (kind === 'fail') throw new ProviderStreamError(`toy failed: ${text}`, 'toy_overloaded');
            if (kind === 'done') {
              done = true;
              used = JSON.parse(text);
              out += chunk({}, 'stop');
            }
          }
          return out;
        },
        end() {
          if (!done) throw new ProviderStreamError('The toy stream ended before its done line.');
          return (ctx.includeUsage && used ? `data: ${JSON.stringify({ id: `chatcmpl-${ctx.requestId}`, object: 'chat.completion.chunk', created: ctx.created, model: ctx.publicModel, choices: [], usage: usage(used) })}\n\n` : '') + 'data: [DONE]\n\n';
        },
        usage: () => (used ? usage(used) : null),
        finishReason: () => (done ? 'stop' : null),
      };
    },
    error(status, _headers, text) {
      let message = text;
      try {
        message = JSON.parse(text).problem;
      } catch {}
      if (status === 401) return { status: 502, message, type: 'server_error', code: null, param: null, credentialRefused: true };
      if (status === 529) return { status: 503, message, type: 'server_error', code: 'upstream_overloaded', param: null, retryAfter: '7' };
      return { status, message, type: 'invalid_request_error', code: null, param: null };
    },
    embeddings: {
      requests: (body, ctx) => (body.input as string[]).map((text) => ({ path: `/toy/${ctx.model}/embed`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) })),
      response: (answers, _body, ctx) => ({ object: 'list', model: ctx.publicModel, data: (answers as Array<{ vector: number[] }>).map((a, index) => ({ object: 'embedding', index, embedding: a.vector })), usage: { prompt_tokens: answers.length, total_tokens: answers.length } }),
    },
    probe: () => ({ path: '/toy/ping', method: 'GET', headers: {}, body: '' }),
  };
}

/** Auth like Vertex's: a token minted from the key, forgotten when refused. */
function toyAuth(state: { mints: number; failMint: boolean }): ProviderAuth {
  let token: string | null = null;
  return {
    async authorize(_request, _target, read) {
      if (state.failMint) throw new ProviderAuthError('the toy token endpoint refused the key (invalid_grant).');
      const secret = read({ env: 'TOY_KEY' });
      if (!secret) throw new ProviderAuthError('TOY_KEY is not set.');
      token ??= `token-${++state.mints}`;
      return { 'x-toy-key': secret, 'x-toy-token': token };
    },
    refused: () => {
      token = null;
      return true;
    },
    secrets: (_upstream, read) => [read({ env: 'TOY_KEY' }) ?? ''],
  };
}

describe('the translated-provider seam', () => {
  let toy: Server;
  let toyURL: string;
  let openai: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  const seen: Array<{ path: string; headers: IncomingMessage['headers']; body: string }> = [];
  const script: ToyScript[] = [];
  const auth = { mints: 0, failMint: false };
  /** Tokens the toy server refuses as expired. */
  const expired = new Set<string>();

  beforeAll(async () => {
    toy = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ path: req.url!, headers: req.headers, body });
        const step = script.shift() ?? {};
        if (expired.has(String(req.headers['x-toy-token']))) return void res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ problem: 'token expired' }));
        if (step.status) return void res.writeHead(step.status, { 'content-type': 'application/json' }).end(step.body ?? JSON.stringify({ problem: `toy says ${step.status}` }));
        const request = JSON.parse(body);
        if (req.url!.endsWith('/embed')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ vector: [request.text.length, 0.5] }));
        const reply = `toy heard ${request.said.join(' | ')}`;
        if (!request.stream) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ reply, used: { in: request.said.length * 3, out: 5 } }));
        res.writeHead(200, { 'content-type': 'application/x-toy-stream' });
        for (const word of reply.split(' ')) res.write(`piece ${word} \n`);
        if (step.failInStream) return void res.end(`fail ${step.failInStream}\n`);
        if (step.cut) return void res.end();
        res.end(`done ${JSON.stringify({ in: 4, out: 6 })}\n`);
      });
    });
    await new Promise<void>((resolve) => toy.listen(0, '127.0.0.1', resolve));
    toyURL = `http://127.0.0.1:${(toy.address() as AddressInfo).port}/prefix`;
    openai = await startFakeUpstream('openai-fallback');
    const toyUpstream = { apiVersion: API, kind: 'Upstream', metadata: { name: 'toy' }, spec: { provider: 'anthropic', baseURL: toyURL, credentials: { env: 'TOY_KEY' } } };
    gw = await startTestGateway(
      [
        toyUpstream,
        upstream('openai', openai.url),
        model('toy-chat', [{ upstream: 'toy', model: 'toy-1:large' }]),
        model('toy-or-openai', [{ upstream: 'toy', model: 'toy-1', priority: 0 }, { upstream: 'openai', model: 'gpt-backup', priority: 1 }]),
        plan('pro', ['toy-chat', 'toy-or-openai']),
        account('acme', 'pro'),
        apiKey(key),
      ],
      {},
      { providers: { anthropic: { translation: toyTranslation(), auth: toyAuth(auth) } as ProviderModule } },
    );
    client = gw.client(key.key, { maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await openai?.close();
    await new Promise<void>((resolve) => toy?.close(() => resolve()));
  });
  beforeEach(() => {
    seen.length = 0;
    script.length = 0;
    openai.requests.length = 0;
    auth.failMint = false;
  });

  it('sends the translated request with the provider credential, under the base URL path, and answers in OpenAI JSON', async () => {
    const answer = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'hi' }, { role: 'user', content: 'there' }] });
    expect(answer.choices[0].message.content).toBe('toy heard hi | there');
    expect(answer.model).toBe('toy-chat');
    expect(answer.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 5, total_tokens: 11 });
    expect(seen[0].path).toBe('/prefix/toy/toy-1%3Alarge/say');
    expect(seen[0].headers['x-toy-key']).toBe(TOY_KEY);
    expect(seen[0].headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen[0].headers)).not.toContain(key.key);
    expect(JSON.parse(seen[0].body)).toEqual({ said: ['hi', 'there'], stream: false });
  });

  it('streams through the translator, with the usage chunk only when asked', async () => {
    const stream = await client.chat.completions.create({ model: 'toy-chat', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream' }] });
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('toy heard stream ');
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 6 });
    const plain = await client.chat.completions.create({ model: 'toy-chat', stream: true, messages: [{ role: 'user', content: 'again' }] });
    const chunks = [];
    for await (const chunk of plain) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
  });

  it("a provider's failure in its stream reaches the SDK as an error, and a cut stream is never a success", async () => {
    script.push({ failInStream: 'overloaded mid-way' });
    const failing = await client.chat.completions.create({ model: 'toy-chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(async () => {
      for await (const _ of failing);
    }).rejects.toThrow(/toy failed: overloaded mid-way/);
    script.push({ cut: true });
    const cut = await client.chat.completions.create({ model: 'toy-chat', stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(async () => {
      for await (const _ of cut);
    }).rejects.toThrow(/ended before its done line/);
  });

  it("the provider's overload falls back to the next target (an OpenAI one), invisible to the client", async () => {
    script.push({ status: 529 });
    const answer = await client.chat.completions.create({ model: 'toy-or-openai', messages: [{ role: 'user', content: 'fallback' }] });
    expect(answer.model).toBe('toy-or-openai');
    expect(seen).toHaveLength(1);
    expect(openai.requests).toHaveLength(1);
    expect(JSON.parse(openai.requests[0].body).model).toBe('gpt-backup');
  });

  it('overload with no target left is 503 with Retry-After; a 4xx is relayed in OpenAI words; a translation 400 names the param before anything is sent', async () => {
    script.push({ status: 529 });
    const overloaded = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(overloaded).toBeInstanceOf(OpenAI.APIError);
    expect(overloaded.status).toBe(503);
    expect(overloaded.headers.get('retry-after')).toBe('7');
    script.push({ status: 400, body: JSON.stringify({ problem: 'toy cannot parse that' }) });
    const bad = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(bad.status).toBe(400);
    expect(bad.error).toMatchObject({ message: 'toy cannot parse that', type: 'invalid_request_error' });
    seen.length = 0;
    const n = await client.chat.completions.create({ model: 'toy-chat', n: 2, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(n.status).toBe(400);
    expect(n.error).toMatchObject({ param: 'n', code: 'unsupported_parameter' });
    expect(seen).toHaveLength(0);
  });

  it('a refused token is minted again once; a refused credential is 502 upstream_auth_failed, never 401; a credential that cannot be had says why', async () => {
    const before = auth.mints;
    await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'warm' }] });
    expired.add(String(seen.at(-1)!.headers['x-toy-token']));
    const answer = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'after expiry' }] });
    expect(answer.choices[0].message.content).toBe('toy heard after expiry');
    expect(auth.mints).toBe(before + 1);
    expect(seen.at(-2)!.headers['x-toy-token']).not.toBe(seen.at(-1)!.headers['x-toy-token']);

    expired.clear();
    // Refused again after the fresh token: the credential itself is wrong.
    script.push({ status: 401, body: JSON.stringify({ problem: `bad key ${TOY_KEY}` }) }, { status: 401, body: JSON.stringify({ problem: `bad key ${TOY_KEY}` }) });
    seen.length = 0;
    const refused = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(seen).toHaveLength(2);
    expect(refused.status).toBe(502);
    expect(refused.error.code).toBe('upstream_auth_failed');
    expect(JSON.stringify(refused.error)).not.toContain(TOY_KEY);

    auth.failMint = true;
    const noToken = await client.chat.completions.create({ model: 'toy-chat', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(noToken.status).toBe(502);
    expect(noToken.error.code).toBe('upstream_auth_failed');
    expect(noToken.error.message).toMatch(/refused the key \(invalid_grant\)/);
  });

  it('embeddings the provider takes one input per call are sent as several calls and answered as one list', async () => {
    const vectors = await client.embeddings.create({ model: 'toy-chat', input: ['a', 'bbb', 'cc'], encoding_format: 'float' });
    expect(vectors.data.map((d) => d.embedding[0])).toEqual([1, 3, 2]);
    expect(seen.map((s) => s.path)).toEqual(['/prefix/toy/toy-1:large/embed', '/prefix/toy/toy-1:large/embed', '/prefix/toy/toy-1:large/embed']);
  });

  it('operations the provider is not translated for are a 400 naming the model; with an OpenAI target in the model they go there', async () => {
    const image = await client.images.generate({ model: 'toy-chat', prompt: 'a cat' }).catch((e) => e);
    expect(image.status).toBe(400);
    expect(image.error).toMatchObject({ code: 'unsupported_for_model', param: 'model' });
    expect(seen).toHaveLength(0);
    await client.images.generate({ model: 'toy-or-openai', prompt: 'a cat' });
    expect(openai.requests.at(-1)!.path).toMatch(/images\/generations$/);
  });
});
