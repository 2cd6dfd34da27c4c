// A thinking budget above the model's own maximum is refused by Gemini (400 INVALID_ARGUMENT: the
// budget must be within the model's range), so the highest efforts stop at each model's ceiling:
// Flash and Flash-Lite 24576, Pro 32768.
import type { Upstream } from '@tollgate/crds';
import { describe, expect, it } from 'vitest';
import { gemini } from './index.ts';

const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'g' }, spec: { provider: 'gemini' } } as Upstream;

function thinkingBudget(model: string, effort: string, max?: number): number {
  const body = { messages: [{ role: 'user', content: 'Is 1009 prime?' }], reasoning_effort: effort, ...(max ? { max_completion_tokens: max } : {}) };
  return JSON.parse(gemini.translation.chatRequest(body, { model, upstream }, false).body).generationConfig.thinkingConfig.thinkingBudget;
}

describe("gemini thinking budget within the model's maximum", () => {
  it('holds xhigh and max to 24576 on Flash and Flash-Lite', () => {
    for (const model of ['gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-flash-latest']) {
      for (const effort of ['high', 'xhigh', 'max']) expect(thinkingBudget(model, effort), `${model} ${effort}`).toBe(24576);
      expect(thinkingBudget(model, 'max', 60000), `${model} with room`).toBe(24576);
    }
  });

  it('lets Pro think up to its own 32768', () => {
    expect(thinkingBudget('gemini-2.5-pro', 'high')).toBe(24576);
    expect(thinkingBudget('gemini-2.5-pro', 'xhigh')).toBe(32768);
    expect(thinkingBudget('gemini-pro-latest', 'max')).toBe(32768);
  });

  it('still leaves the answer a quarter of a smaller maximum', () => {
    expect(thinkingBudget('gemini-2.5-flash', 'max', 16000)).toBe(12000);
  });
});
