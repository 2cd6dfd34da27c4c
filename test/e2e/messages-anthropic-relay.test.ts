// The Messages API to a model served only by Anthropic: Claude's own clients' requests are relayed as
// they came (bytes both ways), with anthropic-version and anthropic-beta forwarded and the client's key
// replaced by the Upstream's; usage is read from the relayed answer for limits and /usage. Thinking
// blocks round-trip as Anthropic signed them (the fake checks the signature).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';
import { waitFor } from '../helpers/wait.ts';

const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';

describe('the Messages API relayed to Anthropic', () => {
  let fake: FakeAnthropic;
  let gw: TestGateway;
  let client: Anthropic;
  let direct: Anthropic;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    process.env.TEST_ANTHROPIC_KEY = fake.apiKey;
    const origin = fake.url.replace(/\/v1\/?$/, '');
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: origin, credentials: { env: 'TEST_ANTHROPIC_KEY' } } },
      model('claude-sonnet-4-6', [{ upstream: 'anthropic' }]),
      model('sonnet', [{ upstream: 'anthropic', model: 'claude-sonnet-4-6' }]),
      plan('pro', ['claude-sonnet-4-6', 'sonnet']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    direct = new Anthropic({ baseURL: origin, apiKey: fake.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('relays the request as it came, with the upstream key and the client betas, and the answer as Anthropic sent it', async () => {
    const request = { model: 'claude-sonnet-4-6', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Hello relay' }] };
    const viaGateway = await client.messages.create(request, { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' } });
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(fake.apiKey);
    expect(sent.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(sent.headers['anthropic-version']).toBeTruthy();
    expect(JSON.stringify(sent.headers)).not.toContain(key.key);
    expect(sent.body).toEqual(request);
    const straight = await direct.messages.create(request);
    expect({ ...viaGateway, id: '' }).toEqual({ ...straight, id: '' });
  });

  it('streams the events as Anthropic sent them, and a public name that differs is renamed for Anthropic', async () => {
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sonnet', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Stream relay' }] }) });
    expect(response.status).toBe(200);
    const text = await response.text();
    const stream = parseAnthropicStream(text);
    expect(stream.blocks[0].text).toBe('You said: Stream relay');
    expect(fake.requests.at(-1)!.body!.model).toBe('claude-sonnet-4-6');
    expect(fake.requests.at(-1)!.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('round-trips signed thinking blocks through a tool loop (what translation could not keep)', async () => {
    const tools: Anthropic.Tool[] = [{ name: 'lookup', description: 'Look something up', input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } }];
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const first = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 2048, thinking, tools, messages: [{ role: 'user', content: 'Please lookup the answer' }] });
    expect(first.content[0].type).toBe('thinking');
    const call = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    const second = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 2048,
      thinking,
      tools,
      messages: [
        { role: 'user', content: 'Please lookup the answer' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '42' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
  });

  it("Anthropic's errors come back in its envelope and words; count_tokens is Anthropic's; usage settles to what Anthropic reported", async () => {
    fake.next({ status: 429, retryAfter: '9', message: 'Number of request tokens has exceeded your per-minute rate limit' });
    const limited = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.error.error.message).toMatch(/per-minute rate limit/);
    const counted = await client.messages.countTokens({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(counted.input_tokens).toBe(4);
    expect(fake.requests.at(-1)!.path).toBe('/v1/messages/count_tokens');
    const usageOf = async () => (await (await fetch(`${gw.telemetry.metricsURL}/usage`)).json()).accounts.acme as { inputTokens: number; outputTokens: number; requests: number };
    const before = await usageOf();
    fake.next({ cache: { read: 5, write: 3 } });
    const cached = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 50, messages: [{ role: 'user', content: 'count my cached words' }] });
    let after = before;
    await waitFor(async () => (after = await usageOf()).requests === before.requests + 1, 10_000, 'the relayed request in /usage');
    // Anthropic's input excludes cache reads and writes; the gateway's (OpenAI's meaning) includes them.
    expect(after.inputTokens - before.inputTokens).toBe(cached.usage.input_tokens + 5 + 3);
    expect(after.outputTokens - before.outputTokens).toBe(cached.usage.output_tokens);
  });
});
