import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from './errors.ts';
import { referencesIn } from './body-references.ts';
import { estimateInput } from '../limits/estimate.ts';
import { parseJsonObject } from './json-object.ts';
import { JsonParserPool } from './json-parser-pool.ts';
import { applyPieces, piecesOf } from './materialize.ts';

const pool = new JsonParserPool(2);
afterAll(() => pool.close());

const big = (text: string) => text.repeat(Math.ceil((300 * 1024) / text.length));

describe('JsonParserPool.parse', () => {
  it('gives back the bytes, the small members as values, and only the facts of the large ones', async () => {
    const body = { model: 'm', stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: big('hello ') }, { type: 'file', file: { file_id: 'file-1' } }] }], n: 2 };
    const bytes = Buffer.from(JSON.stringify(body));
    const parsed = await pool.parse(Buffer.from(bytes));
    expect(parsed.bytes.equals(bytes)).toBe(true);
    expect(parsed.keys).toEqual(['model', 'stream', 'messages', 'n']);
    expect(parsed.values[0]).toEqual({ value: 'm' });
    expect(parsed.values[3]).toEqual({ value: 2 });
    expect(parsed.values[2]).toEqual({
      deferred: { bytes: JSON.stringify(body.messages).length, estimatedTokens: estimateInput(body.messages), references: referencesIn({ messages: body.messages }) },
    });
    expect(parsed.scan.members).toHaveLength(4);
  });

  it('refuses what the event-loop parse refuses, with the same answer', async () => {
    const cases = ['', '   ', '[1]', '{"a":', `{"x":${'['.repeat(200)}${']'.repeat(200)}}`, JSON.stringify(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i])))];
    for (const text of cases) {
      const bytes = Buffer.from(text);
      let expected: ApiError | undefined;
      try {
        parseJsonObject(bytes);
      } catch (error) {
        expected = error as ApiError;
      }
      expect(expected, text.slice(0, 20)).toBeInstanceOf(ApiError);
      const error = await pool.parse(Buffer.from(bytes)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect({ status: (error as ApiError).status, code: (error as ApiError).code, message: (error as ApiError).message }).toEqual({ status: expected!.status, code: expected!.code, message: expected!.message });
    }
  });

  it('bytes that would read otherwise elsewhere (a repeated key) are replaced by the body as parsed', async () => {
    const text = `{"model":"a","model":"b","input":"${big('x')}"}`;
    const parsed = await pool.parse(Buffer.from(text));
    expect(parsed.bytes.toString()).toBe(JSON.stringify(JSON.parse(text)));
    expect(parsed.values[0]).toEqual({ value: 'b' });
  });
});

describe('idle threads', () => {
  it('stop after a while without work, and start again for the next body', async () => {
    const quick = new JsonParserPool(1, { idleStopMs: 50 });
    try {
      await quick.parse(Buffer.from('{"a":1}'));
      expect(quick.threads).toBe(1);
      for (const deadline = Date.now() + 5000; quick.threads > 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(quick.threads).toBe(0);
      expect((await quick.parse(Buffer.from('{"b":2}'))).values).toEqual([{ value: 2 }]);
    } finally {
      await quick.close();
    }
  });
});

describe('materialising large members a piece at a time', () => {
  const value = {
    messages: Array.from({ length: 3000 }, (_, i) => ({ role: 'user', content: i % 1000 === 0 ? big(`long ${i} é 😀 `) : `short ${i}` })),
    input: [Array.from({ length: 200_000 }, (_, i) => i)],
    nested: { a: { b: { c: big('deep ') } }, list: [] },
  };
  // An own `__proto__` member in every message, as JSON.parse reads one (an object literal would set the prototype).
  const text = JSON.stringify(value).replaceAll('{"role":"user"', '{"__proto__":{"polluted":true},"role":"user"');

  it('rebuilds exactly what JSON.parse reads, own __proto__ keys included', async () => {
    const bytes = Buffer.from(text);
    const { members, rebuilt } = await pool.materialize(bytes, ['messages', 'input', 'nested']);
    expect(members).toStrictEqual(JSON.parse(text));
    // The strings rebuilt from slices, each listed once where it is held.
    expect(rebuilt.map(({ path }) => path.join('.'))).toEqual(['messages.0.content', 'messages.1000.content', 'messages.2000.content', 'nested.a.b.c']);
    for (const { parent, key, path } of rebuilt) expect(parent[key]).toBe(path.reduce<any>((node, step) => node[step], JSON.parse(text)));
    // Handed over for good, and freed by the worker.
    expect(bytes.length).toBe(0);
    const first = (members.messages as object[])[0];
    expect(Object.hasOwn(first, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(first)).toBe(Object.prototype);
  });

  it('sends batches of bounded size', () => {
    const parsed = parseJsonObject(Buffer.from(text)).body;
    const batchBytes = 64 * 1024;
    const holder: Record<string, unknown> = {};
    for (const batch of piecesOf(Object.entries(parsed), batchBytes)) {
      // A batch closes once it reaches the bound: at most the bound plus one piece, itself at most the bound.
      expect(JSON.stringify(batch).length).toBeLessThan(2 * batchBytes + 4096);
      applyPieces(holder, batch);
    }
    expect(holder).toStrictEqual(parsed);
  });
});
