// Reasoning through Bedrock, end to end: the openai SDK's `reasoning_effort` becomes Claude's extended
// thinking in Converse (`additionalModelRequestFields.thinking` with the budget Anthropic's API gets, and room for the answer
// beside it), and the thinking Bedrock sends back reaches the client as `reasoning_content` — on the
// message of a JSON answer, and as deltas before the text in a stream. The fake Bedrock answers a
// thinking block only when thinking was asked for, and refuses budgets AWS would refuse.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
process.env.REASONING_AWS_KEY_ID = FAKE_ACCESS_KEY;
process.env.REASONING_AWS_SECRET = FAKE_SECRET_KEY;
const key = newKey('k', 'acme');

/** What a reasoning-aware client reads beside OpenAI's own fields (the openai SDK passes it through untyped). */
type WithReasoning<T> = T & { reasoning_content?: string };

describe('provider: bedrock, reasoning_effort and reasoning_content', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeBedrock();
    gw = await startTestGateway([
      {
        apiVersion: API,
        kind: 'Upstream',
        metadata: { name: 'aws' },
        spec: { provider: 'bedrock', baseURL: fake.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'REASONING_AWS_KEY_ID' }, secretAccessKey: { env: 'REASONING_AWS_SECRET' } } },
      },
      model('claude', [{ upstream: 'aws', model: CLAUDE }]),
      model('llama', [{ upstream: 'aws', model: 'meta.llama3-3-70b-instruct-v1:0' }]),
      plan('pro', ['claude', 'llama']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('JSON: each effort is a thinking budget with room for the answer, and the thinking comes back as reasoning_content', async () => {
    for (const [effort, budget] of [['low', 2048], ['medium', 8192], ['high', 16384]] as const) {
      const answer = await client.chat.completions.create({ model: 'claude', reasoning_effort: effort, messages: [{ role: 'user', content: `think ${effort}` }] });
      const message = answer.choices[0].message as WithReasoning<OpenAI.ChatCompletionMessage>;
      expect(message.reasoning_content).toBe(`Thinking about: think ${effort}`);
      expect(message.content).toBe(`You said: think ${effort}`);
      expect(answer.choices[0].finish_reason).toBe('stop');
      const sent = fake.requests.at(-1)!;
      expect(sent.refused).toBeNull();
      expect(sent.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: budget } });
      expect(sent.body.inferenceConfig.maxTokens).toBeGreaterThan(budget);
    }
  });

  it("the client's own max_completion_tokens is kept when it leaves room beside the budget", async () => {
    await client.chat.completions.create({ model: 'claude', reasoning_effort: 'low', max_completion_tokens: 3000, messages: [{ role: 'user', content: 'bounded' }] });
    expect(fake.requests.at(-1)!.body).toMatchObject({ inferenceConfig: { maxTokens: 3000 }, additionalModelRequestFields: { thinking: { budget_tokens: 2048 } } });
    // A budget larger than three quarters of the client's maximum is cut to that share (docs/providers/bedrock.md).
    await client.chat.completions.create({ model: 'claude', reasoning_effort: 'high', max_completion_tokens: 2000, messages: [{ role: 'user', content: 'tight' }] });
    expect(fake.requests.at(-1)!.body).toMatchObject({ inferenceConfig: { maxTokens: 2000 }, additionalModelRequestFields: { thinking: { budget_tokens: 1500 } } });
  });

  it('stream (written byte by byte): reasoning_content deltas first, then the text, then usage and [DONE]', async () => {
    fake.next({ byteByByte: true });
    const stream = await client.chat.completions.create({ model: 'claude', stream: true, stream_options: { include_usage: true }, reasoning_effort: 'medium', messages: [{ role: 'user', content: 'stream your thoughts' }] });
    const order: string[] = [];
    let reasoning = '';
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as WithReasoning<OpenAI.ChatCompletionChunk.Choice.Delta> | undefined;
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        if (order.at(-1) !== 'reasoning') order.push('reasoning');
      }
      if (delta?.content) {
        text += delta.content;
        if (order.at(-1) !== 'text') order.push('text');
      }
      usage = chunk.usage ?? usage;
    }
    expect(reasoning).toBe('Thinking about: stream your thoughts');
    expect(text).toBe('You said: stream your thoughts');
    expect(order).toEqual(['reasoning', 'text']);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    const sent = fake.requests.at(-1)!;
    expect(sent.rawPath).toMatch(/\/converse-stream$/);
    expect(sent.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 8192 } });
  });

  it('the signature of the thinking block never reaches the client', async () => {
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude', stream: true, reasoning_effort: 'low', messages: [{ role: 'user', content: 'sign' }] }),
    });
    const body = await response.text();
    expect(body).toContain('"reasoning_content":"Thinking about: sign"');
    expect(body).not.toContain('sig-fake');
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('without reasoning_effort (or with none) no thinking is asked for and no reasoning_content comes back', async () => {
    for (const extra of [{}, { reasoning_effort: 'none' as const }]) {
      const answer = await client.chat.completions.create({ model: 'claude', ...extra, messages: [{ role: 'user', content: 'plain' }] });
      expect((answer.choices[0].message as WithReasoning<OpenAI.ChatCompletionMessage>).reasoning_content).toBeUndefined();
      expect(fake.requests.at(-1)!.body.additionalModelRequestFields).toBeUndefined();
    }
  });

  it('refused before anything is sent: a maximum that leaves no room to think, and a model that does not reason', async () => {
    const tight = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'high', max_completion_tokens: 1000, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(tight).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tight.error).toMatchObject({ param: 'reasoning_effort' });
    expect(tight.message).toMatch(/max_completion_tokens above 1024/);
    const llama = await client.chat.completions.create({ model: 'llama', reasoning_effort: 'low', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(llama).toBeInstanceOf(OpenAI.BadRequestError);
    expect(llama.error).toMatchObject({ param: 'reasoning_effort' });
    expect(fake.requests).toHaveLength(0);
  });

  it('a tool loop with reasoning: the call turn thinks, the continuation (tool results) goes without thinking', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'please lookup tides' }];
    const first = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'low', tools, messages });
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect((first.choices[0].message as WithReasoning<OpenAI.ChatCompletionMessage>).reasoning_content).toBe('Thinking about: please lookup tides');
    expect(fake.requests.at(-1)!.body.additionalModelRequestFields).toBeDefined();
    const call = first.choices[0].message.tool_calls![0];
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'high tide at noon' });
    const second = await client.chat.completions.create({ model: 'claude', reasoning_effort: 'low', tools, messages });
    expect(second.choices[0].message.content).toBe('Tool results: high tide at noon');
    expect(fake.requests.at(-1)!.body.additionalModelRequestFields).toBeUndefined();
    expect(fake.requests.at(-1)!.refused).toBeNull();
  });
});
