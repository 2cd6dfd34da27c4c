import { describe, expect, it } from 'vitest';
import { parseObjectTail, withTail } from './json-answer.ts';

const embedding = Array.from({ length: 1536 }, (_, i) => Number((Math.sin(i) * 0.05).toFixed(9)));
const embeddings = (extra: Record<string, unknown> = {}) => JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding }], model: 'up', usage: { prompt_tokens: 8, total_tokens: 8 }, ...extra });
const tailOf = (text: string, keys = ['usage']) => parseObjectTail(Buffer.from(text), keys);

describe('parseObjectTail', () => {
  it('reads the top-level usage at the end of a large answer from its last bytes', () => {
    const tail = tailOf(embeddings())!;
    expect(tail.members).toEqual({ usage: { prompt_tokens: 8, total_tokens: 8 } });
    expect(tail.end).toBe(Buffer.byteLength(embeddings()));
    expect(tailOf(`  \n${embeddings()}\n`)!.members.usage).toEqual({ prompt_tokens: 8, total_tokens: 8 });
  });

  it('members after usage are parsed with it', () => {
    expect(tailOf(embeddings({ system_fingerprint: 'fp' }))!.members).toEqual({ usage: { prompt_tokens: 8, total_tokens: 8 }, system_fingerprint: 'fp' });
  });

  it('finds a key further than 4 KB from the end, and one straddling the edge of the last 4 KB', () => {
    const text = `{"a":1,"usage":{"prompt_tokens":3},"after":"${'x'.repeat(5000)}"}`;
    expect(tailOf(text)!.members).toEqual({ usage: { prompt_tokens: 3 }, after: 'x'.repeat(5000) });
    for (let pad = 4070; pad < 4110; pad++) {
      const edge = `{"a":1,"usage":1,"b":"${'y'.repeat(pad)}"}`;
      expect(tailOf(edge)?.members.usage).toBe(1);
    }
  });

  it('gives up (null) when the last "usage" is nested, a value, or when the answer is cut off or not an object', () => {
    expect(tailOf('{"usage":{"prompt_tokens":1},"data":[{"usage":{"prompt_tokens":2}}]}')).toBeNull();
    expect(tailOf('{"data":{"usage":{"prompt_tokens":2}}}')).toBeNull();
    expect(tailOf('{"usage":{"prompt_tokens":1},"kind":"usage"}')).toBeNull();
    const text = embeddings();
    expect(tailOf(text.slice(0, -1))).toBeNull();
    expect(tailOf(text.slice(0, text.indexOf('"usage"') - 1) + '}')).toBeNull();
    expect(tailOf(text.slice(0, text.indexOf('"total_tokens"')) + '}')).toBeNull();
    expect(tailOf(`<html>${text}`)).toBeNull();
    expect(tailOf('')).toBeNull();
    expect(tailOf('{}')).toBeNull();
    expect(tailOf('{"usage":{"prompt_tokens":1}}}')).toBeNull();
  });

  it('for a rename: both keys must be top-level members of the tail, and the answer rewritten is the same JSON but the model', () => {
    const text = embeddings();
    const tail = tailOf(text, ['usage', 'model'])!;
    expect(tail.members).toEqual({ model: 'up', usage: { prompt_tokens: 8, total_tokens: 8 } });
    tail.members.model = 'public';
    expect(JSON.parse(withTail(Buffer.from(text), tail).toString())).toEqual({ ...JSON.parse(text), model: 'public' });
    // The last "model" is inside usage, the top-level one is earlier: not provable from the tail.
    expect(tailOf('{"model":"up","data":[1],"usage":{"model":"x","prompt_tokens":1}}', ['usage', 'model'])).toBeNull();
    // No model at all: nothing to rename, the tail still proves the usage.
    expect(tailOf('{"data":[1],"usage":{"prompt_tokens":1}}', ['usage', 'model'])!.members).toEqual({ usage: { prompt_tokens: 1 } });
  });
});
