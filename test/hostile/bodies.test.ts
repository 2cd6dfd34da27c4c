// Hostile request bodies against a real gateway on port 0: malformed, truncated, deep, huge, invalid
// UTF-8, prototype keys, wrong types, other charsets, sizes around the limit (declared and chunked),
// and many large uploads at once. Each answer is OpenAI's error shape, a normal request is served
// right after, no single request stalls the event loop, and no log line holds a key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { account, apiKey, expectErrorShape, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import v8 from 'node:v8';
import vm from 'node:vm';
import { expectOpenAiError, firstResponse, MB, rawExchange, registerLogs, registerSecret, scanLogs, withLoopDelay } from './harness.ts';

const key = newKey('k', 'acme');
registerSecret(key.key);
const LIMIT = 50 * MB;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway([plan('pro', ['service-test'], { concurrentRequests: 100 }), account('acme', 'pro'), apiKey(key)], { bodyBudgetBytes: 120 * MB, timeouts: { headersMs: 2000, bodyIdleMs: 1000, keepAliveMs: 65_000 } });
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
});

/** Heap and Buffers still reachable, after full collections (the test and the gateway share this process). */
function liveMemory(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const chat = (extra: Record<string, unknown> = {}) => ({ model: 'service-test', messages: [{ role: 'user' as const, content: 'hi' }], ...extra });

async function servesNormally() {
  const answer = await gw.client(key.key).chat.completions.create(chat());
  expect(answer.choices[0].message.content).toBeTruthy();
}

async function post(path: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const response = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const text = await response.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, json, text };
}

describe('malformed JSON', () => {
  const cases: Array<[string, string, number, string?]> = [
    ['truncated object', '{"model":"service-test","messages":[{"role":"us', 400, 'invalid_json'],
    ['empty body', '', 400, 'invalid_json'],
    ['whitespace only', ' \n\t ', 400, 'invalid_json'],
    ['a JSON array', '[1,2,3]', 400, 'invalid_json'],
    ['a JSON string', '"hello"', 400, 'invalid_json'],
    ['null', 'null', 400, 'invalid_json'],
    ['trailing garbage', '{"model":"service-test"} xyz', 400, 'invalid_json'],
    ['single quotes', "{'model':'service-test'}", 400, 'invalid_json'],
    ['NaN literal', '{"model":"service-test","temperature":NaN}', 400, 'invalid_json'],
    ['lone surrogate escape', '{"model":"service-test","messages":[{"role":"user","content":"\\ud800"}]}', 200],
  ];
  it.each(cases)('%s → %i', async (_name, body, status, code) => {
    const response = await post('/v1/chat/completions', body);
    expect(response.status).toBe(status);
    if (status >= 400) expectErrorShape(response, status, code);
  });

  it('a duplicated key in a 5000-deep body is a 400 naming the nesting limit, never a 500', async () => {
    const deep = `{"model":"service-test","messages":[{"role":"user","content":"hi"}],"user":"a","user":"b","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    for (const path of ['/v1/chat/completions', '/v1/embeddings', '/v1/responses']) {
      const response = await post(path, deep);
      expectErrorShape(response, 400, 'json_too_deep');
      expect(response.json.error.message).toContain('128');
    }
    await servesNormally();
  });

  it('nesting up to the limit is accepted', async () => {
    const response = await post('/v1/chat/completions', JSON.stringify(chat({ metadata: { a: '1' } })).replace('"hi"', '"hi"') );
    expect(response.status).toBe(200);
  });

  it('invalid UTF-8 is refused or replaced, never a 500', async () => {
    const body = Buffer.concat([Buffer.from('{"model":"service-test","messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]);
    const response = await post('/v1/chat/completions', body);
    expect(response.status).toBeLessThan(500);
    await servesNormally();
  });

  it('prototype keys do nothing to the process', async () => {
    for (const body of ['{"__proto__":{"polluted":true},"model":"service-test","messages":[{"role":"user","content":"hi"}]}', '{"constructor":{"prototype":{"polluted":true}},"model":"service-test","messages":[{"role":"user","content":"hi"}]}']) {
      const response = await post('/v1/chat/completions', body);
      expect(response.status).toBeLessThan(500);
      expect(({} as any).polluted).toBeUndefined();
    }
    await servesNormally();
  });

  it('a charset other than UTF-8 is 415, not misread', async () => {
    const body = Buffer.from(JSON.stringify(chat()), 'utf16le');
    const response = await post('/v1/chat/completions', body, { 'content-type': 'application/json; charset=utf-16' });
    expectErrorShape(response, 415, 'unsupported_media_type');
    const latin = await post('/v1/chat/completions', JSON.stringify(chat()), { 'content-type': 'application/json; charset=ISO-8859-1' });
    expectErrorShape(latin, 415, 'unsupported_media_type');
    const utf8 = await post('/v1/chat/completions', JSON.stringify(chat()), { 'content-type': 'application/json; charset="UTF-8"' });
    expect(utf8.status).toBe(200);
  });
});

describe('wrong types in every field', () => {
  const endpoints: Array<[string, Record<string, unknown>]> = [
    ['/v1/chat/completions', chat()],
    ['/v1/embeddings', { model: 'service-test', input: 'hi' }],
    ['/v1/responses', { model: 'service-test', input: 'hi' }],
    ['/v1/images/generations', { model: 'service-test', prompt: 'a cat', size: '256x256' }],
    ['/v1/audio/speech', { model: 'service-test', input: 'hi', voice: 'alloy' }],
  ];
  const wrongValues: unknown[] = [null, 12345, -1, 1e308, true, 'x', [], {}, [null], { $ne: 1 }];
  it.each(endpoints)('%s: each field given each wrong type is a 4xx in the error shape', async (path, valid) => {
    const fields = [...Object.keys(valid), 'temperature', 'max_tokens', 'stream', 'n', 'user', 'tools'];
    let checked = 0;
    const timing = await withLoopDelay(async () => {
      for (const field of fields) {
        for (const value of wrongValues) {
          const body = { ...valid, [field]: value };
          const response = await post(path, JSON.stringify(body));
          if (response.status < 400) continue; // some wrong-looking values are valid for some fields
          expect(response.status, `${path} ${field}=${JSON.stringify(value)}`).toBeLessThan(500);
          expectErrorShape(response, response.status);
          checked++;
        }
      }
    });
    expect(checked).toBeGreaterThan(fields.length);
    // The client runs in this process too; the bound is for a request that would block for seconds.
    expect(timing.maxDelayMs).toBeLessThan(1000);
    await servesNormally();
  });

  it('a 1 MB value is never echoed whole in an error message', async () => {
    const huge = 'r'.repeat(MB);
    const response = await post('/v1/chat/completions', JSON.stringify({ model: 'service-test', messages: [{ role: huge, content: 'hi' }] }));
    expectErrorShape(response, 400);
    expect(response.text.length).toBeLessThan(4096);
    const key = await post('/v1/chat/completions', JSON.stringify({ ...chat(), [huge]: 1 }));
    expectErrorShape(key, 400);
    expect(key.text.length).toBeLessThan(4096);
  });
});

describe('sizes around the 50 MB limit', () => {
  // The bulk sits in a field the gateway refuses after parsing, so the case measures reading and parsing.
  const bodyOf = (size: number) => {
    const head = '{"model":"service-test","messages":[{"role":"user","content":"hi"}],"padding":"';
    return Buffer.concat([Buffer.from(head), Buffer.alloc(size - head.length - 2, 'a'), Buffer.from('"}')]);
  };

  it('just under, declared: read and answered (not 413); just over: 413 before reading', async () => {
    const under = await withLoopDelay(() => post('/v1/chat/completions', bodyOf(LIMIT - 1024)));
    expect(under.result.status).not.toBe(413);
    expectErrorShape(under.result, under.result.status);
    const over = await post('/v1/chat/completions', bodyOf(LIMIT + 1024));
    expectErrorShape(over, 413, 'request_too_large');
    await servesNormally();
  });

  it('just over, chunked: 413 as soon as it passes the limit', async () => {
    const body = bodyOf(LIMIT + 1024);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      Readable.from((function* () {
        for (let i = 0; i < body.length; i += 256 * 1024) yield body.subarray(i, i + 256 * 1024);
      })()).pipe(req);
    });
    expect(status).toBe(413);
    await servesNormally();
  });

  it('a Content-Length longer than the body: 408 once the body stops arriving', async () => {
    const body = JSON.stringify(chat());
    const longer = await rawExchange(gw.port, [`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 20}\r\n\r\n${body}`], { quietMs: 2500 });
    const answer = firstResponse(longer.text);
    expect(answer.status).toBe(408);
    expectOpenAiError(answer.json);
    await servesNormally();
  });
});

describe('memory under many large uploads at once', () => {
  it('past the in-flight body budget: 503 with Retry-After, never an out-of-memory crash; the budget and the memory come back', async () => {
    const before = liveMemory();
    const body = Buffer.alloc(20 * MB, 'a');
    body.write('{"model":"service-test","messages":[{"role":"user","content":"hi"}],"padding":"');
    body.write('"}', body.length - 2);
    const answers = await Promise.all(Array.from({ length: 12 }, () => post('/v1/chat/completions', body)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 400).length).toBeGreaterThan(0);
    for (const answer of answers.filter((a) => a.status === 503)) {
      expectErrorShape(answer, 503, 'server_busy');
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    expect(gw.server.listening).toBe(true);
    // Every reservation is given back: the same uploads one at a time all pass.
    for (let i = 0; i < 3; i++) expect((await post('/v1/chat/completions', body)).status).toBe(400);
    await servesNormally();
    // Nothing of the load is kept: live memory (heap and Buffers, after a collection) is back within
    // a few MB of where it was, this test's own 20 MB body aside.
    const after = liveMemory();
    expect(after - before - body.length).toBeLessThan(16 * MB);
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
