// Shared golden fixtures (test/fixtures/providers/shared/<case>/, described in its README.md): one
// OpenAI request (client.json) fanned out to every translated provider's request
// (<provider>-request.json), and each provider's recorded answer to that request
// (<provider>-answer.json) fanned back in to the one OpenAI answer the client gets (expected.json).
// The providers are taken from the registry the gateway serves with, so a provider added there
// without shared fixtures fails here. `UPDATE_GOLDEN=1` rewrites the request files; the expected
// answer is never rewritten (it is the contract every provider is held to — edit it by hand).
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
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
const differences = readJson(path.join(ROOT, 'differences.json')) as Record<string, Array<{ path: string; value?: unknown; absent?: true; why: string }>>;
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
function expectedFor(provider: TranslatedProvider, dir: string, ids: { id: string; toolCallIds: string[] }): Json {
  const text = readFileSync(path.join(dir, 'expected.json'), 'utf8')
    .replaceAll('"$id"', JSON.stringify(`chatcmpl-${ids.id}`))
    .replace(/"\$toolCallId(\d+)"/g, (_, k: string) => JSON.stringify(ids.toolCallIds[Number(k)] ?? `missing tool call ${k}`));
  const expected = JSON.parse(text) as Json;
  const local = existsSync(path.join(dir, 'differences.json')) ? readJson(path.join(dir, 'differences.json')) : {};
  for (const difference of [...(differences[provider] ?? []), ...(local[provider] ?? [])]) {
    const keys = difference.path.split('.');
    const last = keys.pop()!;
    let node = expected;
    for (const key of keys) node = node[key] ??= {};
    if (difference.absent) delete node[last];
    else node[last] = difference.value;
  }
  return expected;
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
      }

      for (const provider of PROVIDERS) {
        const format = ANSWER_FORMAT[provider];
        const answerFile = path.join(dir, `${format}-answer.json`);
        it(`${provider}: its answer (${format}-answer.json) is the OpenAI answer of expected.json`, () => {
          const recorded = readJson(answerFile);
          const ctx: AnswerContext = {
            publicModel: client.model,
            providerModel: targets[provider].model,
            requestId: 'req-shared',
            created: 1_700_000_000,
            includeUsage: false,
            responseHeaders: recorded.headers ?? {},
          };
          const answer = registry[provider]!.translation.chatResponse(recorded.body, ctx);
          expect(answer).toEqual(expectedFor(provider, dir, providerIds(format, recorded)));
          const usage = answer.usage!;
          expect(usage.prompt_tokens + usage.completion_tokens).toBe(usage.total_tokens);
        });
      }
    });
  }
});
