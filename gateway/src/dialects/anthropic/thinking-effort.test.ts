// Anthropic's thinking.budget_tokens as the reasoning_effort another backend is asked for: the
// smallest effort whose budget in the shared Claude table covers the budget asked (never minimal).
import { describe, expect, it } from 'vitest';
import { THINKING_BUDGET } from '../../providers/claude-thinking.ts';
import { messagesToChat } from './request.ts';

const effortFor = (thinking: unknown) => messagesToChat({ model: 'm', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }], thinking }).chat.reasoning_effort;

describe('thinking budget as reasoning_effort', () => {
  it('asks for the smallest effort whose budget covers the one asked', () => {
    const cases: [number, string][] = [[1024, 'low'], [1025, 'low'], [2048, 'low'], [4000, 'medium'], [8192, 'medium'], [16384, 'high'], [16385, 'xhigh'], [31999, 'xhigh'], [32768, 'xhigh'], [32769, 'max'], [65536, 'max'], [128000, 'max']];
    for (const [budget, effort] of cases) expect(effortFor({ type: 'enabled', budget_tokens: budget }), String(budget)).toBe(effort);
  });

  it('matches the Claude table: every effort but minimal maps back to itself from its own budget', () => {
    for (const [effort, budget] of Object.entries(THINKING_BUDGET)) expect(effortFor({ type: 'enabled', budget_tokens: budget })).toBe(effort === 'minimal' ? 'low' : effort);
  });

  it('asks for nothing when thinking is off, and medium for adaptive thinking', () => {
    expect(effortFor({ type: 'disabled' })).toBeUndefined();
    expect(effortFor(undefined)).toBeUndefined();
    expect(effortFor({ type: 'adaptive' })).toBe('medium');
  });
});
