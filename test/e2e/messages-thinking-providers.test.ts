// Thinking through translation: the Anthropic SDK asks a model on the Gemini API or on Bedrock to
// think (`thinking: {type: 'enabled', budget_tokens}`); the gateway asks the provider for its reasoning
// (Gemini's thinkingConfig with thoughts included, Bedrock's reasoning config for Claude) and the
// provider's thought summary or reasoning text comes back as a thinking block, before the text block,
// in a stream (messages.stream's `thinking` helper) and in a JSON answer alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import { newKey, type TestGateway } from '../helpers/gateway.ts';
import { startClaudeOnGeminiAndBedrock } from '../helpers/claude-on-gemini-and-bedrock.ts';
import type { FakeGemini } from '../fakes/gemini.ts';
import type { FakeBedrock } from '../fakes/bedrock.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';

const key = newKey('k', 'acme');

describe('thinking from Gemini and Bedrock reaches the Anthropic SDK as thinking blocks', () => {
  let gemini: FakeGemini;
  let bedrock: FakeBedrock;
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    ({ gemini, bedrock, gw, client } = await startClaudeOnGeminiAndBedrock('TEST_MT', key));
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([gemini?.close(), bedrock?.close()]);
  });

  const providers = [
    { name: 'Gemini', model: 'flash', asked: () => gemini.requests.at(-1)!.body.generationConfig?.thinkingConfig?.includeThoughts === true },
    { name: 'Bedrock', model: 'bedrock-claude', asked: () => Boolean(bedrock.requests.at(-1)!.body.additionalModelRequestFields?.thinking) },
  ];

  for (const provider of providers) {
    it(`${provider.name}: the provider's reasoning is a thinking block before the text, streamed and whole`, async () => {
      const request = { model: provider.model, max_tokens: 4000, thinking: { type: 'enabled' as const, budget_tokens: 2048 }, messages: [{ role: 'user' as const, content: 'Why is the sea salty' }] };
      const stream = client.messages.stream(request);
      let thinking = '';
      let text = '';
      stream.on('thinking', (delta) => (thinking += delta));
      stream.on('text', (delta) => (text += delta));
      const final = await stream.finalMessage();
      expect(provider.asked()).toBe(true);
      expect(thinking).toContain('Thinking about: Why is the sea salty');
      expect(text).toContain('You said: Why is the sea salty');
      expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
      expect((final.content[0] as Anthropic.ThinkingBlock).thinking).toBe(thinking);
      expect(final.stop_reason).toBe('end_turn');

      const whole = await client.messages.create(request);
      expect(provider.asked()).toBe(true);
      expect(whole.content.map((b) => b.type)).toEqual(['thinking', 'text']);
      expect((whole.content[0] as Anthropic.ThinkingBlock).thinking).toBe(thinking);

      // The same without thinking asked for: no reasoning requested, no thinking block.
      const plain = await client.messages.create({ ...request, thinking: undefined });
      expect(provider.asked()).toBe(false);
      expect(plain.content.map((b) => b.type)).toEqual(['text']);
    });

    it(`${provider.name}: the stream keeps Anthropic's shape with a thinking block (one message_start, thinking_delta only in the thinking block)`, async () => {
      const response = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: provider.model, max_tokens: 4000, stream: true, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Count the moons' }] }),
      });
      expect(response.status).toBe(200);
      const parsed = parseAnthropicStream(await response.text());
      expect(parsed.blocks.map((b) => b.type)).toEqual(['thinking', 'text']);
      expect(parsed.blocks[0].thinking).toContain('Thinking about: Count the moons');
      expect(parsed.usage.output_tokens).toBeGreaterThan(0);
    });
  }
});
