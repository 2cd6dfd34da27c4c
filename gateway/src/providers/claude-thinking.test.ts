// reasoning_effort on a Claude model is the same thinking whether Anthropic's Messages API or Amazon
// Bedrock's Converse serves it, and every effort OpenAI's spec accepts is handled.
import { readFileSync } from 'node:fs';
import type { Upstream } from '@tollgate/crds';
import type { ReasoningEffort as SdkReasoningEffort } from 'openai/resources/shared';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ApiError } from '../http/errors.ts';
import { chatRequest as anthropicRequest } from './anthropic/request.ts';
import { chatRequest as bedrockRequest, claudeModelOf } from './bedrock/request.ts';
import { maxTokensForThinking, THINKING_BUDGET, thinkingBudget } from './claude-thinking.ts';
import { REASONING_EFFORTS, reasoningEffort, type ReasoningEffort } from './reasoning-effort.ts';

type Json = Record<string, any>;
const upstream = (provider: 'anthropic' | 'bedrock', drop = false) =>
  ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: provider }, spec: { provider, ...(provider === 'bedrock' ? { bedrock: { region: 'us-east-1' } } : {}), ...(drop ? { dropUnsupportedParams: true } : {}) } }) as Upstream;

/** The same Claude model by its Anthropic id and its Bedrock id. */
const PAIRS: Array<[anthropic: string, bedrock: string]> = [
  ['claude-sonnet-4-5-20250929', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'],
  ['claude-haiku-4-5-20251001', 'global.anthropic.claude-haiku-4-5-20251001-v1:0'],
  ['claude-3-7-sonnet-20250219', 'anthropic.claude-3-7-sonnet-20250219-v1:0'],
  ['claude-opus-4-20250514', 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-20250514-v1:0'],
];

type Outcome = { budget: number } | { refused: string } | { none: true };

/** What thinking a request gets: its budget, the 400's param, or no thinking. */
function outcome(build: () => Json, read: (body: Json) => Json | undefined): Outcome {
  try {
    const thinking = read(build());
    return thinking ? { budget: thinking.budget_tokens } : { none: true };
  } catch (error) {
    if (error instanceof ApiError) return { refused: error.param ?? '' };
    throw error;
  }
}

function viaAnthropic(model: string, body: Json): Outcome {
  return outcome(() => JSON.parse(anthropicRequest(structuredClone(body), { model, upstream: upstream('anthropic') }, false).body), (b) => b.thinking);
}

function viaBedrock(model: string, body: Json): Outcome {
  return outcome(() => JSON.parse(bedrockRequest(structuredClone(body), { model, upstream: upstream('bedrock') }, false).body), (b) => b.additionalModelRequestFields?.thinking);
}

const messages = [{ role: 'user', content: 'Is 1009 prime?' }];

describe('reasoning_effort: the values OpenAI accepts', () => {
  it('are the ones OpenAI\'s OpenAPI spec lists, as the openai SDK\'s ReasoningEffort type does', () => {
    // Only the ReasoningEffort entry of the spec is parsed (the whole document takes seconds).
    const text = readFileSync(new URL('../../../test/schemas/openai-openapi.yaml', import.meta.url), 'utf8');
    const entry = /\n {4}ReasoningEffort:\n((?: {6}.*\n|\s*\n)+)/.exec(text);
    expect(entry, 'the spec has components.schemas.ReasoningEffort').not.toBeNull();
    const schema = parse(entry![1]!.replace(/^ {6}/gm, '')) as { anyOf: Json[] };
    expect([...REASONING_EFFORTS]).toEqual(schema.anyOf.find((member) => Array.isArray(member.enum))!.enum);
    // And the SDK's type (npm run typecheck fails when the two part).
    const sameAsSdk: [NonNullable<SdkReasoningEffort>] extends [ReasoningEffort] ? ([ReasoningEffort] extends [NonNullable<SdkReasoningEffort>] ? true : false) : false = true;
    expect(sameAsSdk).toBe(true);
  });

  it('refuses any other value with a 400 naming reasoning_effort', () => {
    for (const value of ['extreme', 'HIGH', 3, true]) {
      expect(() => reasoningEffort(value)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_value', param: 'reasoning_effort' }));
    }
    expect(reasoningEffort(undefined)).toBeNull();
    expect(reasoningEffort(null)).toBeNull();
  });
});

describe('Claude thinking: one mapping for Anthropic and Bedrock', () => {
  it('gives the documented budget per effort when max_tokens leaves room', () => {
    const documented = { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 65536 };
    expect(THINKING_BUDGET).toEqual(documented);
    for (const [effort, budget] of Object.entries(documented)) {
      expect(viaAnthropic(PAIRS[0]![0], { messages, reasoning_effort: effort, max_completion_tokens: 100_000 })).toEqual({ budget: Math.min(budget, 75_000) });
      expect(viaBedrock(PAIRS[0]![1], { messages, reasoning_effort: effort, max_completion_tokens: 100_000 })).toEqual({ budget: Math.min(budget, 75_000) });
    }
  });

  it('keeps thinking to three quarters of max_tokens, at least 1024, and refuses when max_tokens leaves no room', () => {
    expect(thinkingBudget('high', 16000)).toBe(12000);
    expect(thinkingBudget('medium', 2000)).toBe(1500);
    expect(thinkingBudget('minimal', 1025)).toBe(1024);
    expect(thinkingBudget('low', 1024)).toBeNull();
    expect(viaBedrock(PAIRS[0]![1], { messages, reasoning_effort: 'high', max_completion_tokens: 16000 })).toEqual({ budget: 12000 });
    expect(viaBedrock(PAIRS[0]![1], { messages, reasoning_effort: 'low', max_completion_tokens: 1024 })).toEqual({ refused: 'reasoning_effort' });
    expect(viaAnthropic(PAIRS[0]![0], { messages, reasoning_effort: 'low', max_completion_tokens: 1024 })).toEqual({ refused: 'reasoning_effort' });
  });

  it('is the same on both for every model, effort and max_tokens (with or without one)', () => {
    for (const [anthropicModel, bedrockModel] of PAIRS) {
      for (const effort of REASONING_EFFORTS) {
        for (const max of [undefined, 1000, 1024, 1025, 2000, 4096, 10_000, 16_000, 32_000, 40_000, 64_000]) {
          const body = { messages, reasoning_effort: effort, ...(max === undefined ? {} : { max_completion_tokens: max }) };
          const label = `${anthropicModel} ${effort} max ${max}`;
          expect(viaBedrock(bedrockModel, body), label).toEqual(viaAnthropic(anthropicModel, body));
        }
      }
    }
  });

  it('without a client max_tokens, gives Bedrock room for the whole budget within the model\'s output maximum', () => {
    const sent = (effort: string, model = PAIRS[0]![1]) => JSON.parse(bedrockRequest({ messages, reasoning_effort: effort }, { model, upstream: upstream('bedrock') }, false).body);
    for (const effort of REASONING_EFFORTS.filter((e) => e !== 'none')) {
      const body = sent(effort);
      expect(body.additionalModelRequestFields.thinking.budget_tokens).toBeLessThanOrEqual(Math.floor((body.inferenceConfig.maxTokens * 3) / 4));
      expect(body.inferenceConfig.maxTokens).toBeLessThanOrEqual(64_000);
    }
    // The table of docs/providers/bedrock.md.
    const documented = { minimal: [1024, 5120], low: [2048, 6144], medium: [8192, 12288], high: [16384, 21846], xhigh: [32768, 43691], max: [48000, 64000] };
    for (const [effort, [budget, max]] of Object.entries(documented)) {
      expect([sent(effort).additionalModelRequestFields.thinking.budget_tokens, sent(effort).inferenceConfig.maxTokens], effort).toEqual([budget, max]);
    }
    expect(sent('medium').inferenceConfig.maxTokens).toBe(maxTokensForThinking('medium', 64_000));
    // Claude Opus 4 answers at most 32000 tokens: xhigh thinks 24000 of them, as on Anthropic's API.
    expect(sent('xhigh', PAIRS[3]![1]).inferenceConfig.maxTokens).toBe(32_000);
    expect(sent('xhigh', PAIRS[3]![1]).additionalModelRequestFields.thinking.budget_tokens).toBe(24_000);
  });

  it('treats none as no thinking and refuses reasoning on Claude models that do not reason, on both', () => {
    expect(viaAnthropic(PAIRS[0]![0], { messages, reasoning_effort: 'none' })).toEqual({ none: true });
    expect(viaBedrock(PAIRS[0]![1], { messages, reasoning_effort: 'none' })).toEqual({ none: true });
    expect(viaAnthropic('claude-3-5-haiku-20241022', { messages, reasoning_effort: 'minimal' })).toEqual({ refused: 'reasoning_effort' });
    expect(viaBedrock('anthropic.claude-3-5-haiku-20241022-v1:0', { messages, reasoning_effort: 'minimal' })).toEqual({ refused: 'reasoning_effort' });
    expect(viaBedrock('meta.llama3-3-70b-instruct-v1:0', { messages, reasoning_effort: 'minimal' })).toEqual({ refused: 'reasoning_effort' });
    expect(viaBedrock(PAIRS[0]![1], { messages, reasoning_effort: 'extreme' })).toEqual({ refused: 'reasoning_effort' });
    // dropUnsupportedParams: left out instead.
    const dropped = JSON.parse(bedrockRequest({ messages, reasoning_effort: 'low' }, { model: 'anthropic.claude-3-5-haiku-20241022-v1:0', upstream: upstream('bedrock', true) }, false).body);
    expect(dropped.additionalModelRequestFields).toBeUndefined();
  });

  it('reads the Claude model out of Bedrock ids, profiles and ARNs', () => {
    expect(claudeModelOf('us.anthropic.claude-opus-4-1-20250805-v1:0').defaultMaxTokens).toBe(32_000);
    expect(claudeModelOf('anthropic.claude-3-5-sonnet-20240620-v1:0').thinking).toBe('none');
    expect(claudeModelOf('arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0').thinking).toBe('budget');
    expect(claudeModelOf('apac.anthropic.claude-sonnet-4-20250514-v1:0').defaultMaxTokens).toBe(64_000);
  });
});
