// Cache hits and writes in the Messages API's usage when the model is reached by translation, in
// Anthropic's meaning: input_tokens leaves out what was read from and written to the cache, which are
// reported apart (cache_read_input_tokens, cache_creation_input_tokens), as Claude Code reads them to
// show costs. Bedrock reports both (Claude on Bedrock caches at Claude Code's cache points), Gemini
// its cached content; JSON and stream alike, parsed by the Anthropic SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import { newKey, type TestGateway } from '../helpers/gateway.ts';
import { startClaudeOnGeminiAndBedrock } from '../helpers/claude-on-gemini-and-bedrock.ts';
import type { FakeGemini } from '../fakes/gemini.ts';
import type { FakeBedrock } from '../fakes/bedrock.ts';

const key = newKey('k', 'acme');
const ask = (model: string) => ({ model, max_tokens: 200, messages: [{ role: 'user' as const, content: 'Summarise the cached document' }] });

describe("the Messages API's usage shows cache reads and writes apart on translated models", () => {
  let gemini: FakeGemini;
  let bedrock: FakeBedrock;
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    ({ gemini, bedrock, gw, client } = await startClaudeOnGeminiAndBedrock('TEST_MC', key));
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([gemini?.close(), bedrock?.close()]);
  });

  it('Bedrock: its inputTokens, cacheReadInputTokens and cacheWriteInputTokens are input, cache read and cache creation, streamed and whole', async () => {
    const usage = { inputTokens: 12, cacheReadInputTokens: 300, cacheWriteInputTokens: 45 };
    bedrock.next({ usage });
    const whole = await client.messages.create(ask('bedrock-claude'));
    bedrock.next({ usage });
    const streamed = await client.messages.stream(ask('bedrock-claude')).finalMessage();
    for (const message of [whole, streamed]) {
      expect(message.usage).toMatchObject({ input_tokens: 12, cache_read_input_tokens: 300, cache_creation_input_tokens: 45 });
      expect(message.usage.output_tokens).toBeGreaterThan(0);
    }
  });

  it("Gemini: cached content is a cache read, left out of input_tokens", async () => {
    gemini.script({ cachedTokens: 5 });
    const whole = await client.messages.create(ask('flash'));
    const prompt = gemini.requests.at(-1)!;
    expect(prompt.path).toContain(':generateContent');
    gemini.script({ cachedTokens: 5 });
    const streamed = await client.messages.stream(ask('flash')).finalMessage();
    for (const message of [whole, streamed]) {
      expect(message.usage.cache_read_input_tokens).toBe(5);
      expect(message.usage.cache_creation_input_tokens).toBe(0);
    }
    // The same request without a cache hit: input is what the hit left out, plus the hit.
    const uncached = await client.messages.create(ask('flash'));
    expect(uncached.usage.cache_read_input_tokens).toBe(0);
    expect(whole.usage.input_tokens).toBe(uncached.usage.input_tokens - 5);
  });
});
