import { describe, expect, it } from 'vitest';
import { CustomInputDecoder } from './custom-input-stream.ts';

/** Feeds `text` cut at `cuts` and returns what each push gave. */
function decode(text: string, cuts: number[]): string[] {
  const decoder = new CustomInputDecoder();
  const out: string[] = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out.push(decoder.push(text.slice(from, cut)));
    from = cut;
  }
  expect(decoder.decoded).toBe(out.join(''));
  return out;
}

/** A deterministic generator, so that a failure names the case that made it. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const SAMPLES = ['*** Begin Patch\n*** Add File: a.txt\n+Hello "world"\n*** End Patch\n', 'tab\there\\back/slash', 'émoji 😀 and 𝄞 clef', '\u0000\u001f control', ''];

describe('a custom tool input decoded as its arguments stream', () => {
  it('gives exactly the input, whatever the cuts, never half a surrogate pair', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const input = SAMPLES[seed % SAMPLES.length]!.repeat(1 + (seed % 3));
      // The model's spacing varies, and some write every non-ASCII character as \u escapes.
      const json = seed % 2 ? JSON.stringify({ input }) : `{ "input" : ${JSON.stringify(input).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)} }`;
      const cuts = Array.from({ length: 1 + Math.floor(next() * 8) }, () => Math.floor(next() * json.length)).sort((a, b) => a - b);
      const out = decode(json, cuts);
      expect(out.join(''), `seed ${seed}: ${json} cut at ${cuts}`).toBe(input);
      for (const piece of out) expect(/[\ud800-\udbff]$/.test(piece), `seed ${seed}: a delta ends in a high surrogate`).toBe(false);
    }
  });

  it('streams as it comes: the characters of a fragment are given with it', () => {
    expect(decode('{"input":"*** Begin Patch\\n+line', [10, 16])).toEqual(['', '*** Be', 'gin Patch\n+line']);
  });

  it('waits for an escape cut by a fragment, and for the low half of a pair', () => {
    expect(decode('{"input":"a\\u00e9b"}', [12, 15])).toEqual(['a', '', 'éb']);
    expect(decode('{"input":"\\ud83d\\ude00!"}', [16, 19])).toEqual(['', '', '😀!']);
  });

  it('gives up on arguments that are not {"input": string}: the input is then given whole when the call closes', () => {
    for (const args of ['{"path":"a","input":"b"}', 'raw patch text', '{"input":42}', '["input"]']) expect(decode(args, [3]).join(''), args).toBe('');
  });

  it('ignores what follows the string', () => {
    expect(decode('{"input":"done"} trailing', [])).toEqual(['done']);
  });
});
