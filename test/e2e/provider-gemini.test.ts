// Gemini models behind the gateway (`provider: gemini` and `provider: vertex`), driven by the clients
// applications use — the official openai SDK, the Vercel AI SDK and LangChain — against the fake
// Gemini API / Vertex AI (test/fakes/gemini.ts), which checks every request as Google does. Tool loops
// run to completion (Gemini 3's thought signatures carried in the tool-call ids), vision, structured
// output, streams with usage, embeddings, every error path, Vertex's token refresh, and limits settled
// to the translated usage.
import { generateKeyPairSync } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, apiKey, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'tollgate@proj-1.iam.gserviceaccount.com';
const key = newKey('k', 'acme');
process.env.TEST_UPSTREAM_KEY = 'sk-openai-backup-0123456789';
process.env.TEST_GEMINI_BAD_KEY = 'AIza-not-the-right-key-0123456789';

let fake: FakeGemini;
let backup: FakeUpstream;
let gw: TestGateway;
let client: OpenAI;

const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
};

beforeAll(async () => {
  fake = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } });
  backup = await startFakeUpstream('openai-backup');
  process.env.TEST_GEMINI_KEY = fake.apiKey;
  process.env.TEST_VERTEX_SA = JSON.stringify({
    type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', client_email: EMAIL, token_uri: fake.tokenUri,
    private_key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  });
  gw = await startTestGateway([
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: fake.url, credentials: { env: 'TEST_GEMINI_KEY' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini-bad-key' }, spec: { provider: 'gemini', baseURL: fake.url, credentials: { env: 'TEST_GEMINI_BAD_KEY' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'vertex' }, spec: { provider: 'vertex', baseURL: fake.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { env: 'TEST_VERTEX_SA' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'vertex-fresh' }, spec: { provider: 'vertex', baseURL: fake.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { env: 'TEST_VERTEX_SA' } } },
    upstream('backup', backup.url),
    model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
    model('g3', [{ upstream: 'gemini', model: 'gemini-3-pro-preview' }]),
    model('vertex-pro', [{ upstream: 'vertex', model: 'gemini-2.5-pro' }]),
    model('gemini-or-vertex', [{ upstream: 'gemini', model: 'gemini-2.5-flash', priority: 0 }, { upstream: 'vertex', model: 'gemini-2.5-flash', priority: 1 }]),
    model('flash-or-openai', [{ upstream: 'gemini', model: 'gemini-2.5-flash', priority: 0 }, { upstream: 'backup', model: 'gpt-backup', priority: 1 }]),
    model('vertex-fresh', [{ upstream: 'vertex-fresh', model: 'gemini-2.5-pro' }]),
    model('bad-key', [{ upstream: 'gemini-bad-key', model: 'gemini-2.5-flash' }]),
    model('embed', [{ upstream: 'gemini', model: 'gemini-embedding-001' }]),
    model('vertex-embed', [{ upstream: 'vertex', model: 'text-embedding-005' }]),
    plan('pro', ['flash', 'g3', 'gemini-or-vertex', 'vertex-pro', 'flash-or-openai', 'vertex-fresh', 'bad-key', 'embed', 'vertex-embed'], { tokensPerMinute: 1_000_000 }),
    account('acme', 'pro'),
    apiKey(key),
  ]);
  client = gw.client(key.key, { maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await backup?.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

async function tokensLeft(): Promise<number> {
  const response = await raw(gw, 'GET', '/v1/models', { key: key.key });
  return Number(response.headers.get('x-ratelimit-remaining-tokens'));
}

describe('provider: gemini and vertex, with the openai SDK', () => {
  it('answers chat in OpenAI JSON, with the key in its header and usage settled to what Gemini reported', async () => {
    const before = await tokensLeft();
    const answer = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello Gemini' }] });
    expect(answer.model).toBe('flash');
    expect(answer.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'You said: Hello Gemini' }, finish_reason: 'stop' });
    expect(answer.usage!.prompt_tokens + answer.usage!.completion_tokens).toBe(answer.usage!.total_tokens);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(sent.headers['x-goog-api-key']).toBe(fake.apiKey);
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
    expect(sent.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
    expect(await tokensLeft()).toBe(before - answer.usage!.total_tokens);
  });

  it('runs a Gemini 3 tool loop to completion, the thought signature riding in the tool-call id', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Use get_weather for Paris' }];
    const first = await client.chat.completions.create({ model: 'g3', messages, tools: [weather] });
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"city-value"}' });
    expect(call.id).toContain('__thought__');
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"temperature":21}' });
    // The fake refuses the replay unless the call carries the signature it issued.
    const second = await client.chat.completions.create({ model: 'g3', messages, tools: [weather] });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Tool results: get_weather={"temperature":21}' } });
    expect(fake.requests.at(-1)!.body.contents[1].parts[0].thoughtSignature).toBe(call.id.split('__thought__')[1]);
  });

  it('streams parallel tool calls on Vertex with an index each, and takes both results back in call order', async () => {
    const time = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } };
    const stream = await client.chat.completions.create({ model: 'vertex-pro', stream: true, messages: [{ role: 'user', content: 'parallel please' }], tools: [weather, time] });
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
        const entry = calls.get(delta.index) ?? { id: '', name: '', args: '' };
        entry.id ||= delta.id ?? '';
        entry.name ||= delta.function?.name ?? '';
        entry.args += delta.function?.arguments ?? '';
        calls.set(delta.index, entry);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect([...calls.keys()]).toEqual([0, 1]);
    expect([...calls.values()].map((c) => c.name)).toEqual(['get_weather', 'get_time']);
    expect(new Set([...calls.values()].map((c) => c.id)).size).toBe(2);
    expect(fake.requests.at(-1)!.path).toBe('/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    expect(fake.requests.at(-1)!.headers.authorization).toMatch(/^Bearer ya29\.fake-/);

    const [a, b] = [...calls.values()];
    const answer = await client.chat.completions.create({
      model: 'vertex-pro',
      tools: [weather, time],
      messages: [
        { role: 'user', content: 'parallel please' },
        { role: 'assistant', content: null, tool_calls: [a, b].map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.args } })) },
        { role: 'tool', tool_call_id: b.id, content: 'noon' },
        { role: 'tool', tool_call_id: a.id, content: 'sunny' },
      ],
    });
    expect(answer.choices[0].message.content).toBe('Tool results: get_weather={"output":"sunny"}; get_time={"output":"noon"}');
  });

  it('sends an image inline and a structured output schema', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const seen = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] });
    expect(seen.choices[0].message.content).toBe('You said: What is this? [image/png, 16 bytes]');
    const structured = await client.chat.completions.create({
      model: 'vertex-pro',
      messages: [{ role: 'user', content: 'A city' }],
      response_format: { type: 'json_schema', json_schema: { name: 'city', schema: { type: 'object', properties: { name: { type: 'string' }, population: { type: 'integer' } }, required: ['name'] } } },
    });
    expect(JSON.parse(structured.choices[0].message.content!)).toEqual({ name: 'name-value', population: 42 });
  });

  it('streams with usage when asked, settled to the limits, and returns reasoning text', async () => {
    const before = await tokensLeft();
    const stream = await client.chat.completions.create({ model: 'flash', stream: true, stream_options: { include_usage: true }, reasoning_effort: 'low', messages: [{ role: 'user', content: 'count one two three four five' }] });
    let text = '';
    let reasoning = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('You said: count one two three four five');
    expect(reasoning).toBe('Thinking about: count one two three four five');
    expect(usage!.completion_tokens_details!.reasoning_tokens).toBeGreaterThan(0);
    expect(usage!.prompt_tokens + usage!.completion_tokens).toBe(usage!.total_tokens);
    expect(fake.requests.at(-1)!.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true });
    expect(await tokensLeft()).toBe(before - usage!.total_tokens);
  });

  it('embeds with both surfaces, in order, with dimensions (the SDK asks for base64), settled to their usage', async () => {
    const before = await tokensLeft();
    const vectors = await client.embeddings.create({ model: 'embed', input: ['alpha', 'beta', 'alpha'], dimensions: 4 });
    expect(vectors.data.map((d) => d.embedding.length)).toEqual([4, 4, 4]);
    expect(vectors.data[0].embedding).toEqual(vectors.data[2].embedding);
    expect(vectors.data[0].embedding).not.toEqual(vectors.data[1].embedding);
    expect(fake.requests.at(-1)!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    const onVertex = await client.embeddings.create({ model: 'vertex-embed', input: 'alpha', dimensions: 4, encoding_format: 'float' });
    expect(onVertex.data[0].embedding).toHaveLength(4);
    expect(onVertex.usage.prompt_tokens).toBeGreaterThan(0);
    // The Gemini API counts no embedding tokens (0); Vertex does.
    expect(vectors.usage.prompt_tokens).toBe(0);
    expect(await tokensLeft()).toBe(before - onVertex.usage.prompt_tokens);
  });
});

describe('provider: gemini and vertex, error paths', () => {
  it('a parameter Gemini has no equivalent for is a 400 naming it, before anything is sent', async () => {
    const n = await client.chat.completions.create({ model: 'flash', n: 2, stream: true, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(n.status).toBe(400);
    expect(n.error).toMatchObject({ param: 'n', code: 'unsupported_parameter' });
    const image = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://127.0.0.1:9/cat.png' } }] }] }).catch((e) => e);
    expect(image.status).toBe(400);
    // A URL the gateway may not fetch (loopback): image URLs are fetched for Gemini (provider-remote-images.test.ts).
    expect(image.error).toMatchObject({ param: 'messages[0].content[0].image_url.url', code: 'invalid_image_url' });
    expect(fake.requests).toHaveLength(0);
  });

  it("Google's 400 comes back as an OpenAI 400 with its message", async () => {
    fake.script({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Request contains an invalid argument.' } });
    const bad = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(bad.status).toBe(400);
    expect(bad.error).toMatchObject({ message: 'Request contains an invalid argument.', type: 'invalid_request_error' });
  });

  it('429 keeps the wait RetryInfo asked for; overload falls back to the next target, or is a 503', async () => {
    fake.script({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Resource has been exhausted (e.g. check quota).', retryDelay: '7s' } });
    const limited = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');

    backup.requests.length = 0;
    fake.script({ error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.', arrayWrapped: true } });
    const fallback = await client.chat.completions.create({ model: 'flash-or-openai', messages: [{ role: 'user', content: 'fall back' }] });
    expect(fallback.model).toBe('flash-or-openai');
    expect(backup.requests).toHaveLength(1);

    fake.script({ error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.' } });
    const overloaded = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(overloaded.status).toBe(503);
  });

  it('fails over from the Gemini API to the same model on Vertex AI, invisibly', async () => {
    fake.script({ error: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.' } });
    const answer = await client.chat.completions.create({ model: 'gemini-or-vertex', messages: [{ role: 'user', content: 'either will do' }] });
    expect(answer).toMatchObject({ model: 'gemini-or-vertex', choices: [{ message: { content: 'You said: either will do' } }] });
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1beta/models/gemini-2.5-flash:generateContent',
      '/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent',
    ]);
  });

  it('a refused key is 502 upstream_auth_failed with no secret in it', async () => {
    const refused = await client.chat.completions.create({ model: 'bad-key', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(refused.status).toBe(502);
    expect(refused.error.code).toBe('upstream_auth_failed');
    expect(JSON.stringify(refused.error)).not.toContain(process.env.TEST_GEMINI_BAD_KEY);
  });

  it('a token endpoint that refuses the service account is 502 upstream_auth_failed saying why, with no key material', async () => {
    fake.refuseNextToken('invalid_grant', 'Invalid JWT Signature.');
    const refused = await client.chat.completions.create({ model: 'vertex-fresh', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(refused.status).toBe(502);
    expect(refused.error.code).toBe('upstream_auth_failed');
    expect(refused.error.message).toContain(`refused the service account ${EMAIL} (invalid_grant: Invalid JWT Signature.)`);
    expect(refused.error.message).not.toContain('PRIVATE KEY');
    expect(fake.requests).toHaveLength(0);
    // The next request mints again and goes through.
    const answer = await client.chat.completions.create({ model: 'vertex-fresh', messages: [{ role: 'user', content: 'now' }] });
    expect(answer.choices[0].message.content).toBe('You said: now');
  });

  it("Vertex's 403 (the service account lacks the permission) is a 502 at once: a new token would not mend it", async () => {
    fake.script({ error: { code: 403, status: 'PERMISSION_DENIED', message: "Permission 'aiplatform.endpoints.predict' denied on resource.", reason: 'IAM_PERMISSION_DENIED' } });
    const denied = await client.chat.completions.create({ model: 'vertex-pro', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(denied.status).toBe(502);
    expect(denied.error.code).toBe('upstream_auth_failed');
    expect(denied.error.message).toContain("'vertex'");
    expect(fake.requests).toHaveLength(1);
  });

  it("an expired Vertex token is refreshed and the request retried once, invisibly", async () => {
    await client.chat.completions.create({ model: 'vertex-pro', messages: [{ role: 'user', content: 'warm up' }] });
    const tokensBefore = fake.tokenRequests;
    fake.expireTokens();
    const answer = await client.chat.completions.create({ model: 'vertex-pro', messages: [{ role: 'user', content: 'after expiry' }] });
    expect(answer.choices[0].message.content).toBe('You said: after expiry');
    expect(fake.tokenRequests).toBe(tokensBefore + 1);
    const [expired, retried] = fake.requests.slice(-2);
    expect(expired.headers.authorization).not.toBe(retried.headers.authorization);
  });

  it("an error inside Gemini's stream, and a stream cut before its finish, are raised by the SDK", async () => {
    fake.script({ errorAfterChunks: 2 });
    const failing = await client.chat.completions.create({ model: 'flash', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine' }] });
    await expect(async () => {
      for await (const _ of failing);
    }).rejects.toThrow(/overloaded/);
    fake.script({ cutAfterChunks: 2 });
    const cut = await client.chat.completions.create({ model: 'vertex-pro', stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight nine' }] });
    await expect(async () => {
      for await (const _ of cut);
    }).rejects.toThrow(/no finishReason/);
  });
});

describe('provider: gemini and vertex, around the call', () => {
  it("metrics name the providers by the semantic conventions, and no Google secret reaches metrics or logs", async () => {
    await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'metrics' }] });
    await client.chat.completions.create({ model: 'vertex-pro', messages: [{ role: 'user', content: 'metrics' }] });
    const metrics = await (await fetch(`${gw.telemetry.metricsURL}/metrics`)).text();
    expect(metrics).toMatch(/gen_ai_provider_name="gcp\.gemini"/);
    expect(metrics).toMatch(/gen_ai_provider_name="gcp\.vertex_ai"/);
    const tokens = fake.requests.map((r) => String(r.headers.authorization ?? '').replace('Bearer ', '')).filter(Boolean);
    expect(tokens.length).toBeGreaterThan(0);
    const privateKey = JSON.parse(process.env.TEST_VERTEX_SA!).private_key.split('\n')[1];
    for (const secret of [fake.apiKey, process.env.TEST_GEMINI_BAD_KEY!, privateKey, ...tokens]) {
      expect(metrics).not.toContain(secret);
      expect(gw.logText()).not.toContain(secret);
    }
  });
});

describe('provider: gemini with the AI SDK, LangChain and the Anthropic SDK', () => {
  it('Anthropic Messages API (as Claude Code speaks it) on a Gemini 3 model: a streamed tool turn and its continuation', async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const tools: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const question = { role: 'user' as const, content: 'Use get_weather for Rome' };
    const first = await anthropic.messages.stream({ model: 'g3', max_tokens: 300, tools, messages: [question] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(call.input).toEqual({ city: 'city-value' });
    const second = await anthropic.messages.create({
      model: 'g3',
      max_tokens: 300,
      tools,
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny' }] }],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect((second.content[0] as Anthropic.TextBlock).text).toBe('Tool results: get_weather={"output":"sunny"}');
  });

  it('AI SDK: a tool loop to completion and a stream with usage', async () => {
    const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.key });
    const result = await generateText({
      model: openai.chat('g3'),
      tools: { getWeather: tool({ description: 'Weather', inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }), execute: async ({ city, unit }) => ({ city, unit, temperature: 21 }) }) },
      stopWhen: stepCountIs(4),
      prompt: 'Call getWeather for Paris',
    });
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0].toolCalls[0].input).toEqual({ city: 'city-value', unit: 'celsius' });
    expect(result.text).toBe('Tool results: getWeather={"city":"city-value","unit":"celsius","temperature":21}');

    const streamed = streamText({ model: openai.chat('vertex-pro'), prompt: 'Stream from the AI SDK' });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe('You said: Stream from the AI SDK');
    expect((await streamed.usage).inputTokens).toBeGreaterThan(0);
  });

  it('LangChain: bindTools round trip and withStructuredOutput', async () => {
    const chat = (name: string) => new ChatOpenAI({ model: name, apiKey: key.key, configuration: { baseURL: `${gw.url}/v1` }, maxRetries: 0 });
    const getWeather = langchainTool(async ({ city }) => `It is sunny in ${city}`, { name: 'get_weather', description: 'Weather', schema: z.object({ city: z.string() }) });
    const bound = chat('flash').bindTools([getWeather]);
    const question = new HumanMessage('Use get_weather please');
    const first = (await bound.invoke([question])) as AIMessage;
    expect(first.tool_calls?.[0]).toMatchObject({ name: 'get_weather', args: { city: 'city-value' } });
    const result = (await getWeather.invoke(first.tool_calls![0])) as ToolMessage;
    const final = await bound.invoke([question, first, result]);
    expect(final.content).toBe('Tool results: get_weather={"output":"It is sunny in city-value"}');

    const person = await chat('vertex-pro').withStructuredOutput(z.object({ name: z.string(), age: z.number().int() })).invoke('Invent a person');
    expect(person).toEqual({ name: 'name-value', age: 42 });
  });
});
