// Claude 4.6 and newer on Bedrock think adaptively, as Anthropic's own API is asked for the same
// model: the openai SDK's reasoning_effort and the Messages API's thinking (Claude Code's
// `{type: "adaptive"}` with `output_config.effort`, or a budget) reach Converse as
// `additionalModelRequestFields: {thinking: {type: "adaptive"}, output_config: {effort}}` for
// `anthropic.claude-opus-4-6-v1`, `us.anthropic.claude-sonnet-4-6` and Opus 4.7 (which the fake,
// like Bedrock, refuses a budget for), and as a thinking budget for Claude 4.5, which refuses adaptive.
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, API, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const key = newKey('k', 'acme');
process.env.AT_AWS_ID = FAKE_ACCESS_KEY;
process.env.AT_AWS_SECRET = FAKE_SECRET_KEY;
const MODELS = {
  'opus-46': 'anthropic.claude-opus-4-6-v1',
  'sonnet-46': 'us.anthropic.claude-sonnet-4-6',
  'opus-47': 'global.anthropic.claude-opus-4-7',
  'sonnet-45': 'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
};

describe('Claude 4.6 and newer on Bedrock: adaptive thinking', () => {
  let bedrock: FakeBedrock;
  let gw: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    bedrock = await startFakeBedrock();
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'AT_AWS_ID' }, secretAccessKey: { env: 'AT_AWS_SECRET' } } } },
      ...Object.entries(MODELS).map(([name, id]) => model(name, [{ upstream: 'aws', model: id }])),
      plan('pro', Object.keys(MODELS)),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    openai = gw.client(key.key);
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await bedrock?.close();
  });

  const sent = () => bedrock.requests.at(-1)!;

  it('reasoning_effort on Claude 4.6 and Opus 4.7 is adaptive thinking with its effort, and the thinking comes back', async () => {
    for (const [name, effort, expected] of [['opus-46', 'high', 'high'], ['sonnet-46', 'minimal', 'low'], ['opus-47', 'medium', 'medium']] as const) {
      const answer = await openai.chat.completions.create({ model: name, reasoning_effort: effort, messages: [{ role: 'user', content: `think about ${name}` }] });
      expect(sent().refused).toBeNull();
      expect(sent().modelId).toBe(MODELS[name]);
      expect(sent().body.additionalModelRequestFields).toEqual({ thinking: { type: 'adaptive' }, output_config: { effort: expected } });
      // Room for thinking and an answer when the client sets no maximum.
      expect(sent().body.inferenceConfig.maxTokens).toBeGreaterThan(4096);
      expect((answer.choices[0].message as { reasoning_content?: string }).reasoning_content).toBe(`Thinking about: think about ${name}`);
    }
  });

  it('Claude 4.5 keeps its thinking budget (Bedrock refuses adaptive thinking for it)', async () => {
    await openai.chat.completions.create({ model: 'sonnet-45', reasoning_effort: 'high', max_completion_tokens: 30000, messages: [{ role: 'user', content: 'think' }] });
    expect(sent().body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 16384 } });
  });

  it("Claude Code's adaptive thinking and output_config.effort reach Bedrock as they were asked, streamed", async () => {
    const params = { model: 'opus-46', max_tokens: 20000, thinking: { type: 'adaptive' }, output_config: { effort: 'max' }, messages: [{ role: 'user', content: 'plan the refactor' }] };
    const message = await anthropic.messages.stream(params as unknown as Anthropic.MessageStreamParams).finalMessage();
    expect(sent().body.additionalModelRequestFields).toEqual({ thinking: { type: 'adaptive' }, output_config: { effort: 'max' } });
    expect(sent().body.inferenceConfig.maxTokens).toBe(20000);
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'Thinking about: plan the refactor' });
  });

  it('a budget asked of Opus 4.7 becomes adaptive thinking rather than the 400 Bedrock gives a budget', async () => {
    const message = await anthropic.messages.create({ model: 'opus-47', max_tokens: 20000, thinking: { type: 'enabled', budget_tokens: 10000 }, messages: [{ role: 'user', content: 'think it through' }] });
    expect(sent().refused).toBeNull();
    expect(sent().body.additionalModelRequestFields).toEqual({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
  });
});
