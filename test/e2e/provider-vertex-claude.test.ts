// Claude on Vertex AI behind the gateway: a Model whose target is a `provider: vertex` upstream with a
// `claude-…` model answers as Claude on Anthropic does — chat JSON and streams with usage (cache
// tokens included), tools, vision, thinking, errors, fallback — and the Messages API (Claude Code, the
// Anthropic SDK) is relayed to Vertex's Claude endpoints. The fake Vertex (fakes/gemini.ts) checks
// Google's token and Vertex's Claude wire shape and hands Claude's semantics to a fake Anthropic
// (fakes/vertex-claude.ts); the service-account token comes from the fake's OAuth endpoint.
import { generateKeyPairSync } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { account, API, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'tollgate@proj-1.iam.gserviceaccount.com';
const key = newKey('k', 'acme');

let claude: FakeAnthropic;
let vertex: FakeGemini;
let gw: TestGateway;
let client: OpenAI;
let messages: Anthropic;

const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const clock = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };

beforeAll(async () => {
  claude = await startFakeAnthropic();
  vertex = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey }, claude });
  process.env.TEST_VERTEX_CLAUDE_SA = JSON.stringify({
    type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', client_email: EMAIL, token_uri: vertex.tokenUri,
    private_key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  });
  process.env.TEST_VERTEX_CLAUDE_ANTHROPIC_KEY = claude.apiKey;
  gw = await startTestGateway([
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'vertex' }, spec: { provider: 'vertex', baseURL: vertex.url, vertex: { project: 'proj-1', location: 'us-east5' }, credentials: { env: 'TEST_VERTEX_CLAUDE_SA' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: claude.url, credentials: { env: 'TEST_VERTEX_CLAUDE_ANTHROPIC_KEY' } } },
    model('sonnet', [{ upstream: 'vertex', model: 'claude-sonnet-4-5@20250929' }]),
    model('opus', [{ upstream: 'vertex', model: 'claude-opus-4-6' }]),
    model('flash', [{ upstream: 'vertex', model: 'gemini-2.5-flash' }]),
    model('sonnet-anywhere', [{ upstream: 'vertex', model: 'claude-sonnet-4-5@20250929', priority: 0 }, { upstream: 'anthropic', model: 'claude-sonnet-4-5', priority: 1 }]),
    plan('pro', ['sonnet', 'opus', 'flash', 'sonnet-anywhere'], { tokensPerMinute: 10_000_000 }),
    account('acme', 'pro'),
    apiKey(key),
  ]);
  client = gw.client(key.key, { maxRetries: 0 });
  messages = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await vertex?.close();
  await claude?.close();
});
beforeEach(() => {
  vertex.requests.length = 0;
  claude.requests.length = 0;
});

/** The last Claude call Vertex received. */
const lastClaudeCall = () => vertex.requests.filter((r) => r.path.includes('/publishers/anthropic/')).at(-1)!;

describe('Claude on Vertex with the openai SDK', () => {
  it("answers chat JSON from Vertex's rawPredict, with the minted token and Vertex's body", async () => {
    const answer = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello over vertex' }] });
    expect(answer.model).toBe('sonnet');
    expect(answer.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'You said: hello over vertex' }, finish_reason: 'stop' });
    expect(answer.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 });
    const sent = lastClaudeCall();
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
    expect(sent.headers['anthropic-version']).toBeUndefined();
    expect(sent.headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
    expect(sent.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', max_tokens: 64000, system: [{ type: 'text', text: 'Be brief.' }] });
    expect(sent.body.model).toBeUndefined();
  });

  it('streams with include_usage on streamRawPredict: cache reads and writes inside prompt_tokens', async () => {
    claude.next({ cache: { read: 30, write: 10 } });
    const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'count these four words' }] });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('You said: count these four words');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 44, completion_tokens: 6, total_tokens: 50, prompt_tokens_details: { cached_tokens: 30 } });
    expect(lastClaudeCall().path).toMatch(/claude-sonnet-4-5@20250929:streamRawPredict$/);
    expect(lastClaudeCall().body.stream).toBe(true);
  });

  it('runs a tool loop to completion, streamed tool calls with OpenAI indexes', async () => {
    const history: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'please get_weather and get_time' }];
    const stream = client.chat.completions.stream({ model: 'sonnet', messages: history, tools: [weather, clock] });
    const first = await stream.finalChatCompletion();
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const calls = first.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'please get_weather and get_time' }], ['get_time', {}]]);
    history.push(first.choices[0].message, ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: `${c.function.name} says ok` })));
    const second = await client.chat.completions.create({ model: 'sonnet', messages: history, tools: [weather, clock] });
    expect(second.choices[0].message.content).toBe('Tool results: get_weather says ok; get_time says ok');
  });

  it('keeps prompt-cache markers on the blocks Claude caches', async () => {
    const system = [{ type: 'text', text: 'A long manual.', cache_control: { type: 'ephemeral' } }];
    await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'system', content: system as never }, { role: 'user', content: 'cached?' }] });
    expect(lastClaudeCall().body.system).toEqual([{ type: 'text', text: 'A long manual.', cache_control: { type: 'ephemeral' } }]);
  });

  it('takes images', async () => {
    const answer = await client.chat.completions.create({
      model: 'sonnet',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'describe' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }],
    });
    expect(answer.choices[0].message.content).toBe('You said: describe [images: image image/png base64]');
  });

  it("thinks with reasoning_effort, as the model's generation thinks (a budget on 4.5, adaptive on 4.6)", async () => {
    const budget = await client.chat.completions.create({ model: 'sonnet', reasoning_effort: 'low', messages: [{ role: 'user', content: 'think it over' }] });
    expect((budget.choices[0].message as { reasoning_content?: string }).reasoning_content).toBe('Thinking about: think it over');
    expect(budget.usage?.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0);
    expect(lastClaudeCall().body.thinking).toMatchObject({ type: 'enabled', budget_tokens: expect.any(Number) });
    await client.chat.completions.create({ model: 'opus', reasoning_effort: 'high', messages: [{ role: 'user', content: 'think hard' }] });
    expect(lastClaudeCall().path).toMatch(/models\/claude-opus-4-6:rawPredict$/);
    expect(lastClaudeCall().body.thinking).toMatchObject({ type: 'adaptive' });
  });

  it("serves Google's models on the same upstream as before", async () => {
    const answer = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'and gemini' }] });
    expect(answer.choices[0].message.content).toBe('You said: and gemini');
    expect(vertex.requests.at(-1)!.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent');
  });
});

describe('Claude on Vertex: errors and fallback', () => {
  it("Claude's overload is a 503 with Retry-After; Google's quota a 429 with RetryInfo's wait; Claude's 400 in OpenAI's words", async () => {
    claude.next({ status: 529 });
    const overloaded = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(overloaded).toBeInstanceOf(OpenAI.APIError);
    expect(overloaded.status).toBe(503);
    expect(overloaded.headers?.get('retry-after')).toBe('1');
    vertex.script({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model', retryDelay: '12s' } });
    const limited = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(limited.status).toBe(429);
    expect(limited.headers?.get('retry-after')).toBe('12');
    expect(limited.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    const invalid = await client.chat.completions.create({ model: 'sonnet', temperature: 0.5, top_p: 0.5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(invalid.status).toBe(400);
  });

  it('refuses embeddings on a Claude model with a 400 naming it, before anything is sent', async () => {
    const refused = await client.embeddings.create({ model: 'sonnet', input: 'x' }).catch((e) => e);
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({ code: 'unsupported_for_model', param: 'model' });
    expect(refused.error.message).toContain('Claude on vertex');
    expect(vertex.requests).toHaveLength(0);
  });

  it('a stream Claude breaks mid-way is an error the SDK raises, never a clean finish', async () => {
    claude.next({ streamErrorAfter: 5, errorType: 'api_error', message: 'Internal server error' });
    const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight' }] });
    const failure = await (async () => {
      for await (const _chunk of stream);
    })().catch((e) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(String(failure.message)).toContain('Internal server error');
  });

  it('an expired token is minted afresh and the call tried once more', async () => {
    await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'warm up' }] });
    const minted = vertex.tokenRequests;
    vertex.expireTokens();
    const answer = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'after expiry' }] });
    expect(answer.choices[0].message.content).toBe('You said: after expiry');
    expect(vertex.tokenRequests).toBe(minted + 1);
  });

  it('falls back from Claude on Vertex to Claude on Anthropic, invisibly to the client', async () => {
    claude.next({ status: 529 });
    const answer = await client.chat.completions.create({ model: 'sonnet-anywhere', messages: [{ role: 'user', content: 'either will do' }] });
    expect(answer).toMatchObject({ model: 'sonnet-anywhere', choices: [{ message: { content: 'You said: either will do' } }] });
    expect(lastClaudeCall().path).toMatch(/:rawPredict$/);
    expect(claude.requests.map((r) => r.headers['x-api-key'])).toEqual([claude.apiKey, claude.apiKey]);
    expect(claude.requests.at(-1)!.body!.model).toBe('claude-sonnet-4-5');
  });
});

describe('the Messages API on Claude on Vertex (@anthropic-ai/sdk, as Claude Code)', () => {
  it("relays a stream to streamRawPredict as the client sent it, with the client's anthropic-beta", async () => {
    const stream = messages.messages.stream(
      { model: 'sonnet', max_tokens: 200, system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'stream the relay' }] },
      { headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    );
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const message = await stream.finalMessage();
    expect(text).toBe('You said: stream the relay');
    expect(message.stop_reason).toBe('end_turn');
    const sent = lastClaudeCall();
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(sent.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16', stream: true, max_tokens: 200, system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] });
    expect(sent.body.model).toBeUndefined();
    expect(sent.headers['anthropic-beta']).toBe('context-1m-2025-08-07');
    expect(sent.headers['anthropic-version']).toBeUndefined();
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.fake-/);
  });

  it('runs a tool use turn and its result', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }];
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'get_weather please' }];
    const first = await messages.messages.create({ model: 'sonnet', max_tokens: 200, tools, messages: history });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'get_weather please' } });
    history.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] });
    const second = await messages.messages.create({ model: 'sonnet', max_tokens: 200, tools, messages: history });
    expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'Tool results: sunny' })]);
    expect(lastClaudeCall().path).toMatch(/:rawPredict$/);
  });

  it('replays signed thinking blocks with a tool result, as Claude Code does', async () => {
    const tools = [{ name: 'get_time', input_schema: { type: 'object' as const, properties: {} } }];
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'get_time while thinking' }];
    const first = await messages.messages.stream({ model: 'sonnet', max_tokens: 2048, thinking, tools, messages: history }).finalMessage();
    expect(first.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about: get_time while thinking', signature: expect.any(String) });
    const use = first.content.find((block) => block.type === 'tool_use')!;
    history.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'noon' }] });
    const second = await messages.messages.create({ model: 'sonnet', max_tokens: 2048, thinking, tools, messages: history });
    expect(second.content.find((block) => block.type === 'text')).toMatchObject({ text: 'Tool results: noon' });
  });

  it('falls back to Claude on Anthropic when Vertex overloads before the first content', async () => {
    claude.next({ streamErrorAfter: 1 });
    const stream = messages.messages.stream({ model: 'sonnet-anywhere', max_tokens: 100, messages: [{ role: 'user', content: 'fall over' }] });
    const message = await stream.finalMessage();
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'You said: fall over' });
    expect(lastClaudeCall().path).toMatch(/:streamRawPredict$/);
    expect(claude.requests.at(-1)!.path).toBe('/v1/messages');
    expect(claude.requests.at(-1)!.body!.model).toBe('claude-sonnet-4-5');
  });

  it('counts tokens on count-tokens:rawPredict', async () => {
    const counted = await messages.messages.countTokens({ model: 'sonnet', messages: [{ role: 'user', content: 'one two three' }] });
    expect(counted.input_tokens).toBe(3);
    const sent = lastClaudeCall();
    expect(sent.path).toBe('/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
    expect(sent.body).toMatchObject({ model: 'claude-sonnet-4-5@20250929', anthropic_version: 'vertex-2023-10-16' });
  });

  it("answers Claude's overload in Anthropic's envelope", async () => {
    claude.next({ status: 529 });
    const failed = await messages.messages.create({ model: 'sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(failed).toBeInstanceOf(Anthropic.APIError);
    expect([503, 529]).toContain(failed.status);
    expect(failed.error).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
  });
});
