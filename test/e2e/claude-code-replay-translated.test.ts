// The recorded Claude Code session (test/fixtures/claude-code/session.json: headers and bodies as
// Claude Code sends them, betas, cache_control, tools) replayed through the gateway to models that
// are not Anthropic's: an OpenAI-compatible upstream, Bedrock and the Gemini API, each behind its
// fake, reached by translation. Each answer is checked twice: for the stream shape Claude Code relies
// on (parseAnthropicStream: one message_start, sequential block indices, each block closed before the
// next, message_delta then message_stop) and as the Anthropic SDK parses it (messages.stream's final
// message): tool_use blocks with their whole input, stop_reason tool_use then end_turn, usage.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { chatModel, planChat } from '../fakes/openai-chat-model.ts';
import { answerFor as geminiAnswer } from '../fakes/gemini-answers.ts';
import { answerFor as bedrockAnswer } from '../fakes/bedrock-answers.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { parseAnthropicStream, type ParsedAnthropicStream } from '../helpers/anthropic-stream.ts';

const API = 'tollgate.dev/v1alpha1';
const session = JSON.parse(readFileSync(new URL('../fixtures/claude-code/session.json', import.meta.url), 'utf8'));
const recorded = (name: string) => session.requests.find((r: { name: string }) => r.name === name);
const key = newKey('cc', 'dev');
process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

interface Replayed {
  raw: ParsedAnthropicStream;
  message: Anthropic.Message;
}

describe('a Claude Code session replayed to models served by translation', () => {
  let openai: FakeUpstream;
  let gemini: FakeGemini;
  let bedrock: FakeBedrock;
  let gw: TestGateway;

  beforeAll(async () => {
    [openai, gemini, bedrock] = await Promise.all([startFakeUpstream('compat'), startFakeGemini(), startFakeBedrock()]);
    openai.behave({ respond: chatModel(openai) });
    process.env.TEST_CCX_GEMINI = gemini.apiKey;
    process.env.TEST_CCX_AWS_ID = FAKE_ACCESS_KEY;
    process.env.TEST_CCX_AWS_SECRET = FAKE_SECRET_KEY;
    gw = await startTestGateway([
      upstream('compat', openai.url),
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'TEST_CCX_GEMINI' } } },
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'TEST_CCX_AWS_ID' }, secretAccessKey: { env: 'TEST_CCX_AWS_SECRET' } } } },
      model('cc-compat', [{ upstream: 'compat', model: 'qwen-coder' }]),
      model('cc-gemini', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
      model('cc-bedrock', [{ upstream: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }]),
      plan('dev', ['cc-*']),
      account('dev', 'dev'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([openai?.close(), gemini?.close(), bedrock?.close()]);
  });

  /**
   * The Anthropic SDK, whose requests are swapped on the wire for Claude Code's recorded one (its
   * headers and body as recorded, the model renamed): the SDK parses what the gateway answers to Claude
   * Code. The raw answer is kept for the stream-shape check.
   */
  function claudeCode(name: string, model: string, auth: Record<string, string>) {
    const request = recorded(name);
    const seen = { text: '' };
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: 'replaced-by-the-recording',
      maxRetries: 0,
      fetch: async () => {
        const response = await fetch(`${gw.url}${request.path}`, { method: request.method, headers: { ...request.headers, ...auth }, body: JSON.stringify({ ...request.body, model }) });
        seen.text = await response.text();
        return new Response(seen.text, { status: response.status, headers: response.headers });
      },
    });
    return { client, request, seen };
  }

  async function replayTurn(name: string, model: string): Promise<Replayed> {
    const { client, request, seen } = claudeCode(name, model, { authorization: `Bearer ${key.key}` });
    const message = await client.messages.stream({ ...request.body, model }).finalMessage();
    return { raw: parseAnthropicStream(seen.text), message };
  }

  /** Usage as Claude Code reads it: in message_start (the input) and message_delta (the output). */
  function expectUsage(turn: Replayed) {
    const start = turn.raw.events[0].data.message.usage;
    expect(start.input_tokens).toBeGreaterThan(0);
    expect(turn.raw.usage.output_tokens).toBeGreaterThan(0);
    expect(turn.message.usage.output_tokens).toBe(turn.raw.usage.output_tokens);
  }

  // Each backend's requests as its fake received them, and the tool input its model made for the last one.
  const backends = [
    {
      name: 'an OpenAI-compatible upstream',
      model: 'cc-compat',
      calls: () => openai.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => JSON.parse(r.body)),
      toolInput: (request: any) => JSON.parse(planChat(request).calls[0].arguments),
    },
    {
      name: 'Bedrock',
      model: 'cc-bedrock',
      calls: () => bedrock.requests.filter((r) => r.operation === 'converse-stream').map((r) => r.body),
      toolInput: (request: any) => bedrockAnswer(request).blocks.flatMap((b) => ('toolUse' in b ? [b.toolUse.input] : []))[0],
    },
    {
      name: 'the Gemini API',
      model: 'cc-gemini',
      calls: () => gemini.requests.filter((r) => r.path.includes('streamGenerateContent')).map((r) => r.body),
      toolInput: (request: any) => geminiAnswer(request, 'gemini-2.5-flash', {}, new Set(), 'r').whole.candidates[0].content.parts.find((p: any) => p.functionCall).functionCall.args,
    },
  ];

  for (const backend of backends) {
    describe(backend.name, () => {
      it('the title request streams one text block that ends the turn', async () => {
        const before = backend.calls().length;
        const title = await replayTurn('title', backend.model);
        expect(backend.calls()).toHaveLength(before + 1);
        expect(title.raw.events.filter((e) => e.event === 'message_start')).toHaveLength(1);
        expect(title.raw.blocks.map((b) => b.type)).toEqual(['text']);
        expect((title.message.content[0] as Anthropic.TextBlock).text).toBe(title.raw.blocks[0].text);
        expect(title.raw.blocks[0].text).toContain('fix the failing test in src/sum.test.ts');
        expect(title.message.stop_reason).toBe('end_turn');
        expectUsage(title);
      });

      it('counts tokens for the request with its tools', async () => {
        const { client, request } = claudeCode('count', backend.model, { 'x-api-key': key.key });
        const counted = await client.messages.countTokens({ ...request.body, model: backend.model });
        expect(counted.input_tokens).toBeGreaterThan(0);
      });

      it('the first turn calls Read with its whole input (stop_reason tool_use); the continuation with its result ends the turn', async () => {
        const first = await replayTurn('turn1', backend.model);
        const indices = first.raw.events.filter((e) => e.event === 'content_block_start').map((e) => e.data.index);
        expect(indices).toEqual(first.raw.blocks.map((_, i) => i));
        const calls = first.message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
        expect(calls.map((c) => c.name)).toEqual(['Read']);
        // The input as the provider's model made it from Read's schema: whole, not cut at a block switch.
        const made = backend.toolInput(backend.calls().at(-1));
        expect(Object.keys(made).sort()).toEqual(['file_path', 'limit', 'offset']);
        expect(calls[0].input).toEqual(made);
        expect(first.raw.blocks.find((b) => b.type === 'tool_use').input).toEqual(calls[0].input);
        expect(calls[0].id).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(first.message.stop_reason).toBe('tool_use');
        expect(first.raw.stopReason).toBe('tool_use');
        expectUsage(first);

        const second = await replayTurn('turn2', backend.model);
        expect(second.message.stop_reason).toBe('end_turn');
        expect(second.message.content.map((b) => b.type)).toEqual(['text']);
        // The recorded tool result reached the provider and its answer quotes it.
        expect((second.message.content[0] as Anthropic.TextBlock).text).toContain('toBe(4)');
        expectUsage(second);
      });
    });
  }
});
