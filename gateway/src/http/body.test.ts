import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { describe, expect, it } from 'vitest';
import { jsonBytesToForward, markBodyEdited, readJsonBody, type JsonObject } from './body.ts';
import { ApiError } from './errors.ts';

const LIMIT = 1024 * 1024;

/** What readJsonBody reads of a Koa context: its headers and the request stream. */
function contextOf(chunks: Array<Buffer | string>, headers: Record<string, string> = {}): Context {
  const req = Readable.from(chunks.map((c) => Buffer.from(c)));
  return { req, get: (name: string) => headers[name.toLowerCase()] ?? '' } as unknown as Context;
}

function declared(body: Buffer | string): Context {
  return contextOf([body], { 'content-length': String(Buffer.byteLength(body)) });
}

async function refusal(ctx: Context, limit = LIMIT): Promise<ApiError> {
  const error = await readJsonBody(ctx, limit).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('readJsonBody', () => {
  it('refuses a declared Content-Length past the limit before reading a byte', async () => {
    let read = false;
    const req = new Readable({
      read() {
        read = true;
        this.push(null);
      },
    });
    const ctx = { req, get: (name: string) => (name === 'content-length' ? String(LIMIT + 1) : '') } as unknown as Context;
    const error = await refusal(ctx);
    expect([error.status, error.code]).toEqual([413, 'request_too_large']);
    expect(read).toBe(false);
  });

  it('cuts off an undeclared body at the limit', async () => {
    const error = await refusal(contextOf(['{"a":"', 'x'.repeat(600), '"}']), 512);
    expect([error.status, error.code]).toEqual([413, 'request_too_large']);
  });

  it('refuses a body shorter than its Content-Length', async () => {
    const error = await refusal(contextOf(['{}'], { 'content-length': '10' }));
    expect([error.status, error.message]).toEqual([400, 'The request body is shorter or longer than its Content-Length.']);
  });

  it('refuses an empty body, and one of nothing but whitespace (String#trim whitespace, Unicode included)', async () => {
    for (const body of ['', '  \n\t', '\u00a0\u2028\ufeff ', '\ufeff']) {
      const error = await refusal(declared(body));
      expect([error.status, error.code, error.message]).toEqual([400, 'invalid_json', 'The request body is empty; send a JSON object.']);
    }
  });

  it('gives JSON.parse its own message for invalid JSON', async () => {
    for (const body of ['{"model": "x", "messages": [', '{"a":1,}', '\u00a0{}', 'nope']) {
      const error = await refusal(declared(body));
      let expected = '';
      try {
        JSON.parse(body);
      } catch (e) {
        expected = (e as Error).message;
      }
      expect([error.status, error.code, error.message]).toEqual([400, 'invalid_json', `We could not parse the JSON body of your request: ${expected}`]);
    }
  });

  it('refuses JSON that is not an object', async () => {
    for (const body of ['[1,2]', '"text"', '42', 'null']) {
      const error = await refusal(declared(body));
      expect([error.status, error.code, error.message]).toEqual([400, 'invalid_json', 'The request body must be a JSON object.']);
    }
  });

  it('drops a UTF-8 byte-order mark, as the decoder it replaces did, and does not forward it', async () => {
    const body = await readJsonBody(declared('\ufeff{"model":"m"}'), LIMIT);
    expect(body).toEqual({ model: 'm' });
    expect(jsonBytesToForward(body, null).toString('utf8')).toBe('{"model":"m"}');
  });

  it('reads a body that arrives in pieces, cut inside multi-byte characters', async () => {
    const text = JSON.stringify({ model: 'm', text: 'é😀'.repeat(100) });
    const bytes = Buffer.from(text);
    const pieces = [bytes.subarray(0, 11), bytes.subarray(11, 12), bytes.subarray(12, 101), bytes.subarray(101)];
    const body = await readJsonBody(contextOf(pieces), LIMIT);
    expect(body).toEqual(JSON.parse(text));
    expect(jsonBytesToForward(body, null).equals(bytes)).toBe(true);
  });
});

describe('jsonBytesToForward', () => {
  const read = (text: string) => readJsonBody(declared(text), LIMIT);
  const big = 'data:image/png;base64,' + 'A'.repeat(64 * 1024);
  const formatted = (model = 'public') => `{\n  "model": "${model}",\n  "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "${big}"}}]}],\n  "stream": true\n}`;

  it('sends the received bytes themselves when nothing changed and the model is the same', async () => {
    const text = '{ "model" : "m",\n "temperature": 0.50, "x": "\\u00e9" }';
    const body = await read(text);
    expect(jsonBytesToForward(body, null).toString('utf8')).toBe(text);
    expect(jsonBytesToForward(body, 'm').toString('utf8')).toBe(text);
  });

  it('renames the model of a small body (serialised again) and of a large one (spliced: every other byte as received)', async () => {
    const small = await read('{"model":"public","messages":[]}');
    expect(JSON.parse(jsonBytesToForward(small, 'upstream').toString('utf8'))).toEqual({ model: 'upstream', messages: [] });
    const large = await read(formatted());
    const sent = jsonBytesToForward(large, 'upstream').toString('utf8');
    expect(sent).toBe(`{"model": "upstream","messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "${big}"}}]}],"stream": true}`);
    // The parsed body itself is untouched: a fallback to another target renames from the original.
    expect(large.model).toBe('public');
    expect(JSON.parse(jsonBytesToForward(large, 'other').toString('utf8')).model).toBe('other');
    expect(jsonBytesToForward(large, 'public').toString('utf8')).toBe(formatted());
  });

  it('splices top-level members added, replaced and deleted after parsing', async () => {
    const body = await read(formatted());
    body.stream_options = { include_usage: true };
    body.max_completion_tokens = 220;
    delete body.stream;
    const sent = jsonBytesToForward(body, 'upstream').toString('utf8');
    expect(sent.startsWith('{"model": "upstream","messages": [{"role": "user"')).toBe(true);
    expect(sent.endsWith('"stream_options":{"include_usage":true},"max_completion_tokens":220}')).toBe(true);
    expect(JSON.parse(sent)).toEqual({ ...body, model: 'upstream' });
  });

  it('a member set back to its parsed value is no change; an undefined one is removed, as JSON.stringify does', async () => {
    const body = await read(formatted());
    const messages = body.messages;
    body.messages = [];
    body.messages = messages;
    expect(jsonBytesToForward(body, null).toString('utf8')).toBe(formatted());
    body.stream = undefined;
    expect(JSON.parse(jsonBytesToForward(body, null).toString('utf8'))).not.toHaveProperty('stream');
  });

  it('serialises the object again when a key repeats, at the top or deeper: the upstream gets what the gateway read', async () => {
    const top = await read(`{"model":"a","x":"${big}","model":"b"}`);
    expect(top.model).toBe('b');
    const sentTop = jsonBytesToForward(top, null).toString('utf8');
    expect(sentTop.match(/"model"/g)).toHaveLength(1);
    expect(JSON.parse(sentTop).model).toBe('b');
    const nested = await read(`{"model":"m","x":"${big}","file":{"file_id":"theirs","file_id":"mine"}}`);
    const sentNested = jsonBytesToForward(nested, null).toString('utf8');
    expect(sentNested).not.toContain('theirs');
    expect(JSON.parse(sentNested).file).toEqual({ file_id: 'mine' });
  });

  it('serialises the object again when a key is written with an escape', async () => {
    const body = await read(`{"model":"m","x":"${big}","t\\u0065mperature":0.5}`);
    expect(jsonBytesToForward(body, null).toString('utf8')).toBe(JSON.stringify(body));
    expect(body.temperature).toBe(0.5);
  });

  it('serialises the object again when the bytes are not valid UTF-8 (as decoded, with U+FFFD)', async () => {
    const bytes = Buffer.concat([Buffer.from('{"model":"m","text":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const body = await readJsonBody(declared(bytes), LIMIT);
    const sent = jsonBytesToForward(body, null);
    expect(sent.equals(bytes)).toBe(false);
    expect(JSON.parse(sent.toString('utf8')).text).toBe('\ufffd(\ufffd');
  });

  it('serialises the whole body again once marked edited below its top level', async () => {
    const body = await read(formatted());
    ((body.messages as Array<{ role: string }>)[0]).role = 'system';
    markBodyEdited(body);
    expect(JSON.parse(jsonBytesToForward(body, null).toString('utf8')).messages[0].role).toBe('system');
  });

  it('under the test suites, refuses to forward a body changed below its top level without markBodyEdited', async () => {
    const body = await read(formatted());
    ((body.messages as Array<{ role: string }>)[0]).role = 'system';
    expect(() => jsonBytesToForward(body, null)).toThrow(/markBodyEdited/);
  });

  it('serialises an object the gateway built itself', () => {
    const built: JsonObject = { model: 'm', input: 'x' };
    expect(jsonBytesToForward(built, 'u').toString('utf8')).toBe('{"model":"u","input":"x"}');
  });
});
