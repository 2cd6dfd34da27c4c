import { describe, expect, it } from 'vitest';
import { SseFrames, type FrameFilter } from './sse-frames.ts';

const USAGE = Buffer.from('"usage"');

/** Drops the usage chunk, rewrites any other frame that mentions usage, keeps the rest; counts what it was shown. */
function filter(): FrameFilter & { inspected: string[] } {
  const inspected: string[] = [];
  return {
    inspected,
    needles: () => [USAGE],
    inspect(frame) {
      const text = frame.toString('utf8');
      inspected.push(text);
      if (text.includes('"choices":[]')) return null;
      return Buffer.from('data: {"rewritten":true}\n\n');
    },
  };
}

/** What the filter does to one whole frame, decided independently of SseFrames. */
function expectedFrame(frame: string): string {
  if (!frame.includes('"usage"')) return frame;
  return frame.includes('"choices":[]') ? '' : 'data: {"rewritten":true}\n\n';
}

/**
 * The oracle: cuts text into lines with a regular expression (a line ends in \r\n, \r or \n, the SSE
 * rule), a frame being lines up to a blank line plus any blank lines after it. Returns the expected
 * output for the whole frames, and the unterminated rest.
 */
function oracle(text: string): { output: string; rest: string } {
  const lines = text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) ?? [];
  let output = '';
  let frame = '';
  let closed = false;
  for (const line of lines) {
    const blank = /^(?:\r\n|\r|\n)$/.test(line);
    if (closed && !blank) {
      output += expectedFrame(frame);
      frame = '';
      closed = false;
    }
    frame += line;
    if (blank) closed = true;
  }
  if (closed) {
    output += expectedFrame(frame);
    frame = '';
  }
  return { output, rest: frame };
}

/** A stream's complete expected output, an unterminated last frame completed as SseFrames#end does. */
function expectedOutput(text: string): string {
  const { output, rest } = oracle(text);
  if (!rest) return output;
  return output + expectedFrame(rest + (rest.endsWith('\n') ? '\n' : '\n\n'));
}

function run(text: string, cuts: number[]) {
  const bytes = Buffer.from(text);
  const f = filter();
  const frames = new SseFrames(f);
  let output = '';
  let previous = 0;
  for (const cut of [...cuts, bytes.length]) {
    const out = frames.feed(bytes.subarray(previous, cut));
    if (out) output += out.toString('utf8');
    previous = cut;
    // After each read: exactly the frames completed so far, nothing of the one still arriving.
    const sofar = oracle(bytes.subarray(0, cut).toString('utf8')).output;
    if (output !== sofar) throw new Error(`after ${JSON.stringify(bytes.subarray(0, cut).toString())}: sent ${JSON.stringify(output)}, expected ${JSON.stringify(sofar)}`);
  }
  const end = frames.end();
  if (end) output += end.toString('utf8');
  return { output, inspected: f.inspected };
}

const chatStream = (eol: string) =>
  [
    `data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}${eol}${eol}`,
    `: keep-alive comment${eol}${eol}`,
    `data: {"id":"c","choices":[{"index":0,"delta":{"content":"é ✓ 𝄞"}}]}${eol}${eol}`,
    `event: message${eol}id: 7${eol}retry: 100${eol}data: {"multi":${eol}data: "line"}${eol}${eol}`,
    `data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}${eol}${eol}${eol}`,
    `data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}${eol}${eol}`,
    `data: [DONE]${eol}${eol}`,
  ].join('');

describe('SseFrames', () => {
  for (const [name, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ]) {
    it(`${name}: split at every byte position, the output is the input without the usage chunk, frame for frame`, () => {
      const text = chatStream(eol);
      const expected = text.replace(/data: \{"id":"c","choices":\[\],"usage"[^\r\n]*(\r\n|\r|\n)+/, '');
      expect(expected).not.toBe(text);
      expect(expectedOutput(text)).toBe(expected);
      const length = Buffer.byteLength(text);
      for (let cut = 0; cut <= length; cut++) {
        const { output, inspected } = run(text, [cut]);
        expect(output).toBe(expected);
        expect(inspected).toHaveLength(1);
      }
    });

    it(`${name}: split into three at many positions, and fed byte by byte`, () => {
      const text = chatStream(eol);
      const expected = expectedOutput(text);
      const length = Buffer.byteLength(text);
      for (let a = 0; a <= length; a += 7) for (let b = a; b <= length; b += 11) expect(run(text, [a, b]).output).toBe(expected);
      expect(run(text, Array.from({ length }, (_, i) => i)).output).toBe(expected);
    });
  }

  it('mixed line endings, blank lines before the first frame, a usage chunk with more blank lines after it', () => {
    const text = '\n\r\ndata: a\r\n\ndata: {"choices":[],"usage":{}}\r\r\n\r\n\ndata: b\n\rdata: {"choices":[{}],"usage":{}}\n\ndata: [DONE]\r\n\r\n';
    const expected = expectedOutput(text);
    expect(expected).toBe('\n\r\ndata: a\r\n\ndata: b\n\rdata: {"rewritten":true}\n\ndata: [DONE]\r\n\r\n');
    const length = Buffer.byteLength(text);
    for (let cut = 0; cut <= length; cut++) expect(run(text, [cut]).output).toBe(expected);
    for (let a = 0; a <= length; a++) for (let b = a; b <= length; b += 3) expect(run(text, [a, b]).output).toBe(expected);
  });

  it('passes a read of whole frames without needles through as the same Buffer, and inspects nothing', () => {
    const f = filter();
    const frames = new SseFrames(f);
    const read = Buffer.from('data: {"a":1}\n\ndata: {"b":2}\n\n');
    expect(frames.feed(read)).toBe(read);
    expect(f.inspected).toHaveLength(0);
  });

  it('holds an unterminated frame until its blank line, and completes it at the end of the stream', () => {
    const frames = new SseFrames(filter());
    expect(frames.feed(Buffer.from('data: {"a":1}\n\ndata: {"b"'))?.toString()).toBe('data: {"a":1}\n\n');
    expect(frames.feed(Buffer.from(':2}\n'))).toBeNull();
    expect(frames.end()?.toString()).toBe('data: {"b":2}\n\n');
    const usage = new SseFrames(filter());
    expect(usage.feed(Buffer.from('data: [DONE]\n\ndata: {"choices":[],"usage":{}}'))?.toString()).toBe('data: [DONE]\n\n');
    expect(usage.end()).toBeNull();
  });

  it('a needle split over two reads is still found', () => {
    const text = 'data: {"x":1}\n\ndata: {"choices":[],"usage":{"prompt_tokens":1}}\n\ndata: [DONE]\n\n';
    const at = text.indexOf('"usage"');
    for (let cut = at; cut <= at + 7; cut++) expect(run(text, [cut]).output).toBe('data: {"x":1}\n\ndata: [DONE]\n\n');
  });

  it('a frame larger than 1 MB is forwarded as it arrives, read (not changed) when it ends, and the frames after it are handled again', () => {
    const f = filter();
    const frames = new SseFrames(f);
    const big = `data: {"usage":"${'x'.repeat(1024 * 1024)}`;
    let output = frames.feed(Buffer.from(big.slice(0, 600_000)))?.toString() ?? '';
    expect(output).toBe('');
    output += frames.feed(Buffer.from(big.slice(600_000)))?.toString() ?? '';
    expect(output).toBe(big);
    expect(f.inspected).toHaveLength(0);
    output += frames.feed(Buffer.from('"}\n\ndata: {"choices":[],"usage":{}}\n\ndata: [DONE]\n\n'))?.toString() ?? '';
    expect(output).toBe(`${big}"}\n\ndata: [DONE]\n\n`);
    expect(f.inspected).toEqual([`${big}"}\n\n`, 'data: {"choices":[],"usage":{}}\n\n']);
  });

  it('cut: nothing to add after whole frames or a held one; a frame sent in part is ended', () => {
    const frames = new SseFrames(filter());
    expect(frames.feed(Buffer.from('data: {"a":1}\n\ndata: {"b"'))?.toString()).toBe('data: {"a":1}\n\n');
    expect(frames.cut()).toBeNull();
    const large = new SseFrames(filter());
    expect(large.feed(Buffer.from(`data: "${'x'.repeat(1024 * 1024 + 10)}`))?.length).toBe(1024 * 1024 + 17);
    expect(large.cut()?.toString()).toBe('\n\n');
  });

  it('a large frame the stream ends in is completed and read too', () => {
    const f = filter();
    const frames = new SseFrames(f);
    const big = `data: {"usage":"${'x'.repeat(1024 * 1024 + 10)}"}`;
    const output = (frames.feed(Buffer.from(big))?.toString() ?? '') + (frames.end()?.toString() ?? '');
    expect(output).toBe(`${big}\n\n`);
    expect(f.inspected).toEqual([`${big}\n\n`]);
  });
});
