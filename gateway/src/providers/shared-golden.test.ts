// Shared golden fixtures (test/fixtures/providers/shared/<case>/, described in its README.md). One
// OpenAI request (client.json) is fanned out to every translated provider's request
// (<provider>-request.json); each provider's answer to it (<format>-answer.json) is fanned back in to
// the one OpenAI answer the client must get (expected.json), and so is each provider's stream of that
// answer where a case has one (<format>-stream.sse; bedrock-stream.json, framed here with
// @smithy/eventstream-codec), put back together as the SDKs' stream helpers do. The providers come
// from the registry the gateway serves with, so one registered without fixtures here fails.
// `UPDATE_GOLDEN=1` rewrites the request files; expected.json never (it is the contract every
// provider is held to: edit it by hand).
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { encodeEvents, type FixtureEvents } from '../../../scripts/bedrock-fixture.ts';
import type { AnswerContext, TranslatedProvider } from './provider.ts';
import { builtInProviders } from './registry.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/providers/shared');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const registry = builtInProviders();
const PROVIDERS = Object.keys(registry).sort() as TranslatedProvider[];

type Json = Record<string, any>;
const readJson = (file: string): Json => JSON.parse(readFileSync(file, 'utf8'));
const pretty = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** The model and Upstream each provider is addressed with (the same for every case). */
const targets = readJson(path.join(ROOT, 'targets.json')) as Record<TranslatedProvider, { model: string; upstream: Json }>;
/** Where a provider's answer rightly differs from expected.json, field by field, each with its reason. */
type Difference = { path: string; value?: unknown; absent?: true; only?: 'whole' | 'stream'; why: string };
const differences = readJson(path.join(ROOT, 'differences.json')) as Record<string, Difference[]>;
/** Whose answer format each provider reads: Vertex answers in the Gemini API's format. */
const ANSWER_FORMAT: Record<TranslatedProvider, string> = { anthropic: 'anthropic', gemini: 'gemini', vertex: 'gemini', bedrock: 'bedrock' };

const cases = readdirSync(ROOT).filter((name) => statSync(path.join(ROOT, name)).isDirectory()).sort();

function upstream(provider: TranslatedProvider): Upstream {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: `shared-${provider}` }, spec: targets[provider].upstream } as Upstream;
}

function golden(file: string, actual: string): void {
  if (UPDATE) writeFileSync(file, actual);
  if (!existsSync(file)) throw new Error(`missing golden file ${file} (write it with UPDATE_GOLDEN=1, then review it against providers.md)`);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

/**
 * The ids of an answer, by providers.md §2.3: `chatcmpl-` + the provider's message id (Anthropic
 * `id`, Gemini `responseId`, Bedrock's `x-amzn-requestid` header); tool-call ids passed through
 * from Anthropic and Bedrock, made up by the gateway for Gemini (which names its calls by no id).
 */
function providerIds(format: string, recorded: Json): { id: string; toolCallIds: string[] } {
  const body = recorded.body;
  if (format === 'anthropic') {
    return { id: body.id, toolCallIds: body.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => b.id) };
  }
  if (format === 'bedrock') {
    return { id: recorded.headers['x-amzn-requestid'], toolCallIds: body.output.message.content.filter((b: Json) => b.toolUse).map((b: Json) => b.toolUse.toolUseId) };
  }
  const calls = body.candidates[0].content.parts.filter((p: Json) => p.functionCall);
  return { id: body.responseId, toolCallIds: calls.map((p: Json, k: number) => p.functionCall.id ?? `call_${body.responseId}_${k}`) };
}

/** expected.json with its `$id` / `$toolCallId<k>` placeholders filled, and the provider's documented differences applied. */
function expectedFor(provider: TranslatedProvider, dir: string, ids: { id: string; toolCallIds: string[] }, kind: 'whole' | 'stream'): Json {
  const text = readFileSync(path.join(dir, 'expected.json'), 'utf8')
    .replaceAll('"$id"', JSON.stringify(`chatcmpl-${ids.id}`))
    .replace(/"\$toolCallId(\d+)"/g, (_, k: string) => JSON.stringify(ids.toolCallIds[Number(k)] ?? `missing tool call ${k}`));
  const expected = JSON.parse(text) as Json;
  const local = existsSync(path.join(dir, 'differences.json')) ? readJson(path.join(dir, 'differences.json')) : {};
  for (const difference of [...(differences[provider] ?? []), ...(local[provider] ?? [])] as Difference[]) {
    if (difference.only && difference.only !== kind) continue;
    const keys = difference.path.split('.');
    const last = keys.pop()!;
    let node = expected;
    for (const key of keys) node = node[key] ??= {};
    if (difference.absent) delete node[last];
    else node[last] = difference.value;
  }
  return expected;
}

/**
 * The streamed form of a golden request, by each provider's documented streaming call: Anthropic's
 * `stream: true` on the same path, Gemini's and Vertex's `:streamGenerateContent?alt=sse` (SSE, not
 * a JSON array), Bedrock's `/converse-stream` (the binary event stream); the body otherwise the same.
 */
function streamedForm(provider: TranslatedProvider, request: Json): Json {
  const out = structuredClone(request);
  if (provider === 'anthropic') {
    out.headers.accept = 'text/event-stream';
    out.body.stream = true;
  } else if (provider === 'bedrock') {
    out.path = out.path.replace(/\/converse$/, '/converse-stream');
    out.headers.accept = 'application/vnd.amazon.eventstream';
  } else {
    out.path = out.path.replace(/:generateContent$/, ':streamGenerateContent?alt=sse');
    out.headers.accept = 'text/event-stream';
  }
  return out;
}

function answerContext(client: Json, provider: TranslatedProvider, headers: Json, includeUsage: boolean): AnswerContext {
  return { publicModel: client.model, providerModel: targets[provider].model, requestId: 'req-shared', created: 1_700_000_000, includeUsage, responseHeaders: headers };
}

/** A provider's recorded stream for a case: its bytes, or null when the case has none. */
function streamBytes(dir: string, format: string): Buffer | null {
  if (format === 'bedrock') {
    const events = path.join(dir, 'bedrock-stream.json');
    return existsSync(events) ? encodeEvents(readJson(events) as FixtureEvents) : null;
  }
  const sse = path.join(dir, `${format}-stream.sse`);
  return existsSync(sse) ? readFileSync(sse) : null;
}

/**
 * An OpenAI SSE stream put back together as the SDKs' stream helpers do: content and reasoning text
 * concatenated, tool calls gathered by their `index` (the id and name from the first delta, the
 * arguments from every fragment), the finish reason, and the usage chunk. Along the way it checks
 * what every stream must be: `data:` frames of one id, the role first, `[DONE]` last.
 */
function reassemble(sse: string): Json {
  const frames = sse.split('\n\n').filter((frame) => frame !== '' && !frame.startsWith(':'));
  expect(frames.at(-1)).toBe('data: [DONE]');
  const chunks = frames.slice(0, -1).map((frame) => {
    expect(frame.startsWith('data: '), frame).toBe(true);
    return JSON.parse(frame.slice('data: '.length)) as Json;
  });
  expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  expect(chunks[0]!.choices[0].delta.role).toBe('assistant');
  let content = '';
  let reasoning = '';
  const thinkingBlocks: Json[] = [];
  const toolCalls: Json[] = [];
  let finish: string | null = null;
  let usage: Json | undefined;
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices as Json[]) {
      const delta = choice.delta as Json;
      if (typeof delta.content === 'string') content += delta.content;
      if (typeof delta.reasoning_content === 'string') reasoning += delta.reasoning_content;
      if (Array.isArray(delta.thinking_blocks)) thinkingBlocks.push(...delta.thinking_blocks);
      for (const call of (delta.tool_calls ?? []) as Json[]) {
        expect(call.index, 'tool-call indexes count from 0 without gaps').toBeLessThanOrEqual(toolCalls.length);
        const slot = (toolCalls[call.index] ??= { id: call.id, type: call.type, function: { name: call.function?.name, arguments: '' } });
        slot.function.arguments += call.function?.arguments ?? '';
      }
      if (choice.finish_reason) {
        expect(finish, 'one finish reason').toBeNull();
        finish = choice.finish_reason;
      }
    }
  }
  const message: Json = { role: 'assistant', content: content === '' && toolCalls.length > 0 ? null : content, refusal: null };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (thinkingBlocks.length > 0) message.thinking_blocks = thinkingBlocks;
  const first = chunks[0]!;
  return { id: first.id, object: 'chat.completion', created: first.created, model: first.model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], ...(usage ? { usage } : {}) };
}

/** Tool-call arguments as the client reads them (parsed): a stream carries the model's own JSON text, spaces and all. */
function parsedArguments(answer: Json): Json {
  const copy = structuredClone(answer);
  for (const call of copy.choices[0].message.tool_calls ?? []) call.function.arguments = JSON.parse(call.function.arguments);
  return copy;
}

describe('shared golden fixtures: one OpenAI request, every provider', () => {
  it('covers every provider the gateway registers', () => {
    expect(PROVIDERS).toEqual(['anthropic', 'bedrock', 'gemini', 'vertex']);
    for (const provider of PROVIDERS) expect(targets[provider], `targets.json names ${provider}`).toBeDefined();
    expect(cases.length).toBeGreaterThanOrEqual(5);
  });

  for (const name of cases) {
    const dir = path.join(ROOT, name);
    const client = readJson(path.join(dir, 'client.json'));

    describe(name, () => {
      for (const provider of PROVIDERS) {
        it(`${provider}: the request it is sent`, () => {
          const { translation } = registry[provider]!;
          const request = translation.chatRequest(structuredClone(client), { model: targets[provider].model, upstream: upstream(provider) }, client.stream === true);
          golden(path.join(dir, `${provider}-request.json`), pretty({ method: request.method, path: request.path, headers: request.headers, body: JSON.parse(request.body) }));
        });

        it(`${provider}: the same request streamed (stream_options stays with the gateway)`, () => {
          const streamed = { ...structuredClone(client), stream: true, stream_options: { include_usage: true } };
          const request = registry[provider]!.translation.chatRequest(streamed, { model: targets[provider].model, upstream: upstream(provider) }, true);
          const whole = readJson(path.join(dir, `${provider}-request.json`));
          expect({ method: request.method, path: request.path, headers: request.headers, body: JSON.parse(request.body) }).toEqual(streamedForm(provider, whole));
        });
      }

      for (const provider of PROVIDERS) {
        const format = ANSWER_FORMAT[provider];
        const answerFile = path.join(dir, `${format}-answer.json`);
        it(`${provider}: its answer (${format}-answer.json) is the OpenAI answer of expected.json`, () => {
          const recorded = readJson(answerFile);
          const ctx = answerContext(client, provider, recorded.headers ?? {}, false);
          const answer = registry[provider]!.translation.chatResponse(recorded.body, ctx);
          expect(answer).toEqual(expectedFor(provider, dir, providerIds(format, recorded), 'whole'));
          const usage = answer.usage!;
          expect(usage.prompt_tokens + usage.completion_tokens).toBe(usage.total_tokens);
        });
      }

      for (const provider of PROVIDERS) {
        const format = ANSWER_FORMAT[provider];
        const bytes = streamBytes(dir, format);
        if (!bytes) continue;
        it(`${provider}: its stream amounts to the answer of expected.json, whatever the splits`, () => {
          const ctx = answerContext(client, provider, readJson(path.join(dir, `${format}-answer.json`)).headers ?? {}, true);
          const feed = (parts: Buffer[]) => {
            const translator = registry[provider]!.translation.chatStream(ctx);
            let out = '';
            for (const part of parts) out += translator.feed(part);
            return out + translator.end();
          };
          const whole = feed([bytes]);
          expect(feed([...bytes].map((byte) => Buffer.from([byte]))), 'fed one byte at a time').toBe(whole);
          const ids = providerIds(format, readJson(path.join(dir, `${format}-answer.json`)));
          expect(parsedArguments(reassemble(whole))).toEqual(parsedArguments(expectedFor(provider, dir, ids, 'stream')));
        });
      }
    });
  }
});
