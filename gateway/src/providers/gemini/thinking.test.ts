// reasoning_effort on Gemini: a thinking budget (2.5) that leaves room for the answer inside
// maxOutputTokens, which Gemini counts the thinking against (googleapis/python-genai #2062: a budget
// as large as the maximum leaves an empty answer cut off at the limit), and every effort OpenAI accepts.
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { REASONING_EFFORTS } from '../reasoning-effort.ts';
import { gemini } from './index.ts';

const upstream = (extra: Record<string, unknown> = {}) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'g' }, spec: { provider: 'gemini', ...extra } }) as Upstream;
const messages = [{ role: 'user', content: 'Is 1009 prime?' }];

function generationConfig(body: Record<string, unknown>, model = 'gemini-2.5-flash', extra: Record<string, unknown> = {}) {
  return JSON.parse(gemini.translation.chatRequest({ messages, ...body }, { model, upstream: upstream(extra) }, false).body).generationConfig ?? {};
}

describe('gemini thinking budget', () => {
  it('keeps the budget to three quarters of maxOutputTokens, so the answer keeps a quarter', () => {
    expect(generationConfig({ reasoning_effort: 'high', max_completion_tokens: 16000 })).toEqual({ maxOutputTokens: 16000, thinkingConfig: { thinkingBudget: 12000, includeThoughts: true } });
    expect(generationConfig({ reasoning_effort: 'xhigh', max_tokens: 4000 }).thinkingConfig).toEqual({ thinkingBudget: 3000, includeThoughts: true });
    // Below the cap, the effort's own budget.
    expect(generationConfig({ reasoning_effort: 'medium', max_completion_tokens: 16000 }).thinkingConfig).toEqual({ thinkingBudget: 8192, includeThoughts: true });
    // Without a maximum, Gemini's own (the model's output limit) leaves room: the effort's budget.
    expect(generationConfig({ reasoning_effort: 'high' }).thinkingConfig).toEqual({ thinkingBudget: 24576, includeThoughts: true });
  });

  it('never leaves thinking the whole of maxOutputTokens, for any effort and maximum', () => {
    for (const effort of REASONING_EFFORTS) {
      for (const max of [1, 2, 100, 1000, 1024, 8192, 16000, 24576, 32768, 65536]) {
        const config = generationConfig({ reasoning_effort: effort, max_completion_tokens: max });
        expect(config.thinkingConfig.thinkingBudget, `${effort} within ${max}`).toBeLessThanOrEqual(Math.floor((max * 3) / 4));
      }
    }
  });

  it('turns thinking off when there is no room, except on Pro, which cannot think less than 128 tokens', () => {
    expect(generationConfig({ reasoning_effort: 'low', max_completion_tokens: 1 }).thinkingConfig).toEqual({ thinkingBudget: 0 });
    expect(generationConfig({ reasoning_effort: 'low', max_completion_tokens: 100 }, 'gemini-2.5-pro').thinkingConfig).toEqual({ thinkingBudget: 128, includeThoughts: true });
    expect(generationConfig({ reasoning_effort: 'high', max_completion_tokens: 16000 }, 'gemini-2.5-pro').thinkingConfig).toEqual({ thinkingBudget: 12000, includeThoughts: true });
  });

  it('handles every effort OpenAI accepts, and refuses others', () => {
    const budgets = Object.fromEntries(REASONING_EFFORTS.map((effort) => [effort, generationConfig({ reasoning_effort: effort }).thinkingConfig]));
    expect(budgets).toEqual({
      none: { thinkingBudget: 0 },
      minimal: { thinkingBudget: 512, includeThoughts: true },
      low: { thinkingBudget: 1024, includeThoughts: true },
      medium: { thinkingBudget: 8192, includeThoughts: true },
      high: { thinkingBudget: 24576, includeThoughts: true },
      xhigh: { thinkingBudget: 24576, includeThoughts: true },
      max: { thinkingBudget: 24576, includeThoughts: true },
    });
    expect(generationConfig({ reasoning_effort: 'max' }, 'gemini-3-pro-preview').thinkingConfig).toEqual({ thinkingLevel: 'HIGH', includeThoughts: true });
    expect(() => generationConfig({ reasoning_effort: 'extreme' })).toThrow(expect.objectContaining({ status: 400, code: 'invalid_value', param: 'reasoning_effort' }));
    // none asks for no reasoning, which a model that does not reason honours.
    expect(generationConfig({ reasoning_effort: 'none' }, 'gemini-2.0-flash').thinkingConfig).toBeUndefined();
    expect(() => generationConfig({ reasoning_effort: 'low' }, 'gemini-2.0-flash')).toThrow(expect.objectContaining({ param: 'reasoning_effort' }));
  });
});
