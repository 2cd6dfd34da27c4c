import { describe, expect, it } from 'vitest';
import { estimateTokens } from './estimate.ts';

describe('estimateTokens', () => {
  it('counts text by characters and reserves max_tokens for every choice', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'x'.repeat(400) }], max_tokens: 50, n: 2 };
    const estimate = estimateTokens(body, 'chat', 1024);
    expect(estimate.output).toBe(100);
    expect(estimate.outputParam).toBe('max_tokens');
    expect(estimate.input).toBeGreaterThanOrEqual(100);
    expect(estimate.input).toBeLessThan(115);
  });

  it('prices a Data URL image flat instead of by its base64 length', () => {
    const image = `data:image/png;base64,${'A'.repeat(5_000_000)}`;
    const body = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: image } }] }] };
    const estimate = estimateTokens(body, 'chat', 256);
    expect(estimate.input).toBeLessThan(1000);
    expect(estimate).toMatchObject({ output: 256, outputParam: null });
  });

  it('uses max_completion_tokens before max_tokens, max_output_tokens for responses, nothing for embeddings', () => {
    expect(estimateTokens({ max_completion_tokens: 7, max_tokens: 9 }, 'chat', 1).output).toBe(7);
    expect(estimateTokens({ input: 'hi', max_output_tokens: 33 }, 'responses', 1)).toMatchObject({ output: 33, outputParam: 'max_output_tokens' });
    expect(estimateTokens({ model: 'e', input: [[1, 2, 3, 4]] }, 'embeddings', 1024)).toMatchObject({ input: 4, output: 0, outputParam: null });
  });
});
