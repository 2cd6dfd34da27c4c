// Tool call ids from backends that are not Anthropic's, as the Messages API gives them to Claude Code:
// Anthropic requires `tool_use.id` to match ^[a-zA-Z0-9_-]+$, and Claude Code keeps the history it was
// given and may send it to a Claude model next (/model, or its small fast model). Other providers' ids
// need not match: Kimi-style OpenAI-compatible servers answer `functions.get_weather:0`, Gemini 3's
// carry a base64 thought signature (`+`, `/`). The gateway gives the client ids in Anthropic's charset
// and, when the client sends them back, the backend its own id again (the signature Gemini 3 checks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { chatModel } from '../fakes/openai-chat-model.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';

const API = 'tollgate.dev/v1alpha1';
const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;
const key = newKey('k', 'acme');
process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';
const TOOLS: Anthropic.Tool[] = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
const KIMI_ID = 'functions.get_weather:0';

/** The fake's chat model, with the tool call ids a Kimi-style server gives (`functions.<name>:<index>`). */
function kimiIds(fake: FakeUpstream) {
  const answer = chatModel(fake);
  return (req: IncomingMessage, res: ServerResponse) => {
    const write = res.write.bind(res) as (chunk: string) => boolean;
    const end = res.end.bind(res) as (chunk?: string) => ServerResponse;
    const rename = (text: string) => text.replaceAll('call_fake0get_weather', KIMI_ID);
    res.write = ((chunk: string) => write(rename(chunk))) as ServerResponse['write'];
    res.end = ((chunk?: string) => end(chunk === undefined ? chunk : rename(chunk))) as ServerResponse['end'];
    answer(req, res);
  };
}

describe('tool_use ids in Anthropic’s charset whatever the backend, its own id back to the backend', () => {
  let compat: FakeUpstream;
  let anthropic: FakeAnthropic;
  let gemini: FakeGemini;
  let gw: TestGateway;
  let client: Anthropic;

  beforeAll(async () => {
    [compat, anthropic, gemini] = await Promise.all([startFakeUpstream('kimi'), startFakeAnthropic(), startFakeGemini()]);
    compat.behave({ respond: kimiIds(compat) });
    process.env.TEST_TI_ANTHROPIC = anthropic.apiKey;
    process.env.TEST_TI_GEMINI = gemini.apiKey;
    gw = await startTestGateway([
      upstream('kimi', compat.url),
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'TEST_TI_ANTHROPIC' } } },
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'TEST_TI_GEMINI' } } },
      model('kimi-k2', [{ upstream: 'kimi' }]),
      model('claude-sonnet-4-6', [{ upstream: 'anthropic' }]),
      model('gemini-3-pro', [{ upstream: 'gemini', model: 'gemini-3-pro-preview' }]),
      plan('pro', ['kimi-k2', 'claude-sonnet-4-6', 'gemini-3-pro']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([compat?.close(), anthropic?.close(), gemini?.close()]);
  });

  const question: Anthropic.MessageParam = { role: 'user', content: 'Use get_weather for Oslo' };
  const continuation = (first: Anthropic.Message): Anthropic.MessageParam[] => {
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    return [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny' }] }];
  };

  for (const streamed of [false, true]) {
    it(`a Kimi-style id (${streamed ? 'streamed' : 'JSON'}) reaches the client in Anthropic's charset, goes back to the upstream as it was, and a Claude model accepts the history`, async () => {
      const request = { model: 'kimi-k2', max_tokens: 200, tools: TOOLS, messages: [question] };
      const first = streamed ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
      const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      expect(call.id).toMatch(ANTHROPIC_ID);

      const second = await client.messages.create({ ...request, messages: continuation(first) });
      expect(second.content).toEqual([{ type: 'text', text: 'Tool results: Sunny' }]);
      const sent = JSON.parse(compat.requests.at(-1)!.body);
      expect(sent.messages.map((m: { tool_calls?: Array<{ id: string }>; tool_call_id?: string }) => m.tool_calls?.[0].id ?? m.tool_call_id).filter(Boolean)).toEqual([KIMI_ID, KIMI_ID]);

      // Claude Code switched to a Claude model: Anthropic validates the ids of the history it was given.
      const switched = await client.messages.create({ ...request, model: 'claude-sonnet-4-6', messages: continuation(first) });
      expect(switched.stop_reason).toBe('end_turn');
    });
  }

  it("Gemini 3's signed calls: ids in Anthropic's charset, the signature back to Gemini (which checks it) on the continuation", async () => {
    // Its signatures are random base64: over a few turns, some have `+` or `/` that must not reach the client.
    for (let turn = 0; turn < 6; turn++) {
      const request = { model: 'gemini-3-pro', max_tokens: 200, tools: TOOLS, messages: [question] };
      const first = turn % 2 ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
      const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      expect(call.id).toMatch(ANTHROPIC_ID);
      const second = await client.messages.create({ ...request, messages: continuation(first) });
      expect(second.stop_reason).toBe('end_turn');
      const replayed = gemini.requests.at(-1)!.body.contents[1].parts.find((p: { functionCall?: unknown }) => p.functionCall);
      // The fake refuses a signature it did not issue; the gateway's stand-in for a lost one would pass unchecked.
      expect(replayed.thoughtSignature).toMatch(/^[A-Za-z0-9+/]{32}$/);
    }
  });
});
