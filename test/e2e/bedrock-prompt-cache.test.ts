// Prompt caching through Bedrock, end to end: Claude Code's cache_control markers (Anthropic SDK on
// /v1/messages) and the same markers on an OpenAI chat request (the openai SDK, the non-standard
// extension LiteLLM and Portkey accept) reach Converse as cachePoint blocks right after the marked
// block — in system, in a message's content, as their own toolConfig.tools element — and the fake
// Bedrock, which caches a repeated prefix as AWS does, reports the cache write then the read, which
// clients see as cache_creation_input_tokens / cache_read_input_tokens and as
// prompt_tokens_details.cached_tokens. Where markers mean nothing they are left out: a Bedrock model
// that does not cache, the Gemini API (whose fake refuses unknown fields), and an OpenAI-compatible
// upstream given a gateway-made request; an OpenAI client's own markers to such an upstream are
// relayed as it sent them. The Anthropic provider keeps them on its blocks.
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, API, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { MIN_CACHED_TOKENS } from '../fakes/bedrock-cache.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { chatModel } from '../fakes/openai-chat-model.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';

const key = newKey('k', 'acme');
const EPHEMERAL = { type: 'ephemeral' as const };
const CACHE_POINT = { cachePoint: { type: 'default' } };
/** A system prompt past Claude's smallest cacheable prefix (the fake counts words as tokens). */
const MANUAL = Array.from({ length: MIN_CACHED_TOKENS + 100 }, (_, i) => `clause${i}`).join(' ');
process.env.PC_AWS_ID = FAKE_ACCESS_KEY;
process.env.PC_AWS_SECRET = FAKE_SECRET_KEY;
process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret';

const session = JSON.parse(readFileSync(new URL('../fixtures/claude-code/session.json', import.meta.url), 'utf8'));

/** A Claude Code turn: a system prompt in two blocks, tools, a tool call and its marked result (a new `topic` changes nothing before the last marker). */
function claudeCodeTurn(modelName: string, topic: string): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model: modelName,
    max_tokens: 300,
    system: [{ type: 'text', text: 'You are Claude Code.' }, { type: 'text', text: MANUAL, cache_control: EPHEMERAL }],
    tools: [
      { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
      { name: 'Edit', description: 'Edits a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } }, cache_control: EPHEMERAL },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Read the notes file' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }, { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { path: 'notes.md' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'the notes say hello', cache_control: EPHEMERAL }, { type: 'text', text: `and ${topic}?` }] },
    ],
  };
}

describe('prompt caching through Bedrock', () => {
  let bedrock: FakeBedrock;
  let gemini: FakeGemini;
  let compat: FakeUpstream;
  let claude: FakeAnthropic;
  let gw: TestGateway;
  let anthropic: Anthropic;
  let openai: OpenAI;

  beforeAll(async () => {
    [bedrock, gemini, compat, claude] = await Promise.all([startFakeBedrock(), startFakeGemini(), startFakeUpstream('compat'), startFakeAnthropic()]);
    compat.behave({ respond: chatModel(compat) });
    process.env.PC_GEMINI = gemini.apiKey;
    process.env.PC_ANTHROPIC = claude.apiKey;
    const aws = { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'PC_AWS_ID' }, secretAccessKey: { env: 'PC_AWS_SECRET' } } };
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: aws },
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'PC_GEMINI' } } },
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'claude' }, spec: { provider: 'anthropic', baseURL: claude.url, credentials: { env: 'PC_ANTHROPIC' } } },
      upstream('compat', compat.url),
      model('sonnet', [{ upstream: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }]),
      model('opus', [{ upstream: 'aws', model: 'anthropic.claude-opus-4-6-v1' }]),
      model('llama', [{ upstream: 'aws', model: 'meta.llama3-3-70b-instruct-v1:0' }]),
      model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
      model('qwen', [{ upstream: 'compat', model: 'qwen-coder' }]),
      model('haiku', [{ upstream: 'claude', model: 'claude-haiku-4-5' }]),
      plan('pro', ['sonnet', 'opus', 'llama', 'flash', 'qwen', 'haiku']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    openai = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([bedrock?.close(), gemini?.close(), compat?.close(), claude?.close()]);
  });

  it("Claude Code's markers become cache points after the marked system block, tool and tool result", async () => {
    const answer = await anthropic.messages.create(claudeCodeTurn('sonnet', 'the layout'));
    expect(answer.content.at(-1)).toMatchObject({ type: 'text' });
    const sent = bedrock.requests.at(-1)!;
    expect(sent.refused).toBeNull();
    expect(sent.body.system).toEqual([{ text: 'You are Claude Code.' }, { text: MANUAL }, CACHE_POINT]);
    expect(sent.body.toolConfig.tools.map((tool: Record<string, { name?: string }>) => tool.toolSpec?.name ?? Object.keys(tool)[0])).toEqual(['Read', 'Edit', 'cachePoint']);
    expect(sent.body.toolConfig.tools[2]).toEqual(CACHE_POINT);
    const last = sent.body.messages.at(-1);
    expect(last.role).toBe('user');
    expect(last.content.map((block: object) => Object.keys(block)[0])).toEqual(['toolResult', 'cachePoint', 'text']);
    expect(last.content[1]).toEqual(CACHE_POINT);
    // Nothing else was marked: no other cache point anywhere.
    expect(JSON.stringify(sent.body).split('cachePoint').length - 1).toBe(3);
  });

  it('the recorded Claude Code session (headers and bodies as Claude Code sent them): one cache point per marker, after the same blocks', async () => {
    for (const name of ['turn1', 'turn2']) {
      const recorded = session.requests.find((r: { name: string }) => r.name === name);
      const response = await fetch(`${gw.url}${recorded.path}`, { method: 'POST', headers: { ...recorded.headers, 'x-api-key': key.key }, body: JSON.stringify({ ...recorded.body, model: 'opus' }) });
      expect(response.status).toBe(200);
      await response.text();
      const sent = bedrock.requests.at(-1)!;
      expect(sent.refused).toBeNull();
      const markers = JSON.stringify(recorded.body).split('"cache_control"').length - 1;
      expect(markers).toBeGreaterThan(0);
      expect(JSON.stringify(sent.body).split('"cachePoint"').length - 1).toBe(markers);
      // Claude Code marks the last system block, the last tool and the last turn's last block.
      expect(sent.body.system.at(-1)).toEqual(CACHE_POINT);
      expect(sent.body.toolConfig.tools.at(-1)).toEqual(CACHE_POINT);
      expect(sent.body.messages.at(-1).content.at(-1)).toEqual(CACHE_POINT);
    }
  });

  it('Messages usage: the first turn writes the cache, the next reads it (JSON and stream), input_tokens leaving both out', async () => {
    const first = await anthropic.messages.create(claudeCodeTurn('opus', 'the tests'));
    const second = await anthropic.messages.create(claudeCodeTurn('opus', 'the docs'));
    const third = await anthropic.messages.stream(claudeCodeTurn('opus', 'the build')).finalMessage();
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(MIN_CACHED_TOKENS);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    for (const next of [second, third]) {
      expect(next.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
      expect(next.usage.cache_creation_input_tokens).toBe(0);
      // Only the words after the last cache point are new input: "and the docs?".
      expect(next.usage.input_tokens).toBe(3);
    }
    expect(first.usage.input_tokens).toBe(3);
    const [, sentSecond] = bedrock.requests.slice(-3);
    expect(sentSecond.body.system.at(-1)).toEqual(CACHE_POINT);
  });

  it('OpenAI chat: cache_control on a system part, a user part and a tool reaches Converse, and cached_tokens counts the read', async () => {
    const request = {
      model: 'sonnet',
      messages: [
        { role: 'system', content: [{ type: 'text', text: MANUAL, cache_control: EPHEMERAL }] },
        { role: 'user', content: [{ type: 'text', text: 'Here is the ticket.', cache_control: EPHEMERAL }, { type: 'text', text: 'Summarise it' }] },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } }, cache_control: EPHEMERAL }],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const first = await openai.chat.completions.create(request);
    const sent = bedrock.requests.at(-1)!.body;
    expect(sent.system).toEqual([{ text: MANUAL }, CACHE_POINT]);
    expect(sent.messages[0].content).toEqual([{ text: 'Here is the ticket.' }, CACHE_POINT, { text: 'Summarise it' }]);
    expect(sent.toolConfig.tools).toEqual([{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object', properties: {} } } } }, CACHE_POINT]);
    const written = MIN_CACHED_TOKENS + 100 + 4;
    expect(first.usage).toMatchObject({ prompt_tokens: written + 2, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: written } });

    const stream = await openai.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    // OpenAI's meaning: the cached tokens are inside prompt_tokens.
    expect(usage).toMatchObject({ prompt_tokens: written + 2, prompt_tokens_details: { cached_tokens: written } });
    expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);
  });

  it('a Bedrock model that does not cache is sent no cache point; the Gemini API gets no marker', async () => {
    const llama = await anthropic.messages.create(claudeCodeTurn('llama', 'llamas'));
    expect(llama.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    const sent = bedrock.requests.at(-1)!;
    expect(sent.modelId).toBe('meta.llama3-3-70b-instruct-v1:0');
    expect(JSON.stringify(sent.body)).not.toContain('cachePoint');
    // The Gemini fake refuses any field the Gemini API does not define: the answer proves none leaked.
    const flash = await anthropic.messages.create(claudeCodeTurn('flash', 'gemini'));
    expect(flash.type).toBe('message');
    expect(JSON.stringify(gemini.requests.at(-1)!.body)).not.toContain('cache_control');
  });

  it("an OpenAI-compatible upstream: a gateway-made request carries no marker, a client's own chat request is relayed as sent", async () => {
    const translated = await anthropic.messages.create(claudeCodeTurn('qwen', 'compat'));
    expect(translated.type).toBe('message');
    const made = compat.requests.at(-1)!;
    expect(made.path).toBe('/v1/chat/completions');
    expect(made.body).not.toContain('cache_control');
    // The markers' structure survives without them: the system prompt is still its two parts.
    expect(JSON.parse(made.body).messages[0].content).toEqual([{ type: 'text', text: 'You are Claude Code.' }, { type: 'text', text: MANUAL }]);

    const own = { model: 'qwen', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: EPHEMERAL }] }] } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    await openai.chat.completions.create(own);
    expect(JSON.parse(compat.requests.at(-1)!.body).messages[0].content[0].cache_control).toEqual(EPHEMERAL);
  });

  it('the Anthropic provider keeps chat markers on the system block, the tool and the tool_result', async () => {
    const request = {
      model: 'haiku',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Be brief.', cache_control: EPHEMERAL }] },
        { role: 'user', content: 'Look it up' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'found it', cache_control: EPHEMERAL }] },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } }, cache_control: EPHEMERAL }],
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    await openai.chat.completions.create(request);
    const sent = claude.requests.at(-1)!.body as Record<string, any>;
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.', cache_control: EPHEMERAL }]);
    expect(sent.tools[0].cache_control).toEqual(EPHEMERAL);
    const result = sent.messages.at(-1).content[0];
    expect(result).toMatchObject({ type: 'tool_result', tool_use_id: 'call_1', cache_control: EPHEMERAL });
    expect(result.content).toEqual([{ type: 'text', text: 'found it' }]);
  });
});
