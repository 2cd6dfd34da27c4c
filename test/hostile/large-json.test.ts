// Large JSON bodies never hold the event loop (docs/adr/0021): a body past the offload size is parsed
// in a worker thread, and the event loop only ever gets small things back: the bytes to relay, the
// small top-level members, and the facts of the large ones (token estimate, referenced ids) — or,
// for service-test, the large members in pieces of bounded size. Each case measures the longest
// stall of this process's event loop (it hosts the gateway) with the CPU-charged measure of the
// harness, and checks what the upstream received, byte for byte.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, expectErrorShape, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { postBytes } from '../helpers/proxy-tools.ts';
import { OPENAI_MAX_STRING_LENGTH } from '../../gateway/src/http/string-length.ts';
import { MB, registerLogs, registerSecret, scanLogs, whileHealthChecked } from './harness.ts';

process.env.LARGE_JSON_UPSTREAM_KEY = registerSecret('sk-large-json-upstream-credential-8c1d');
const key = newKey('k', 'acme');
registerSecret(key.key);
let gw: TestGateway;
let fake: FakeUpstream;

/**
 * "A few tens of milliseconds", with room for a shared machine: a full garbage collection of this
 * process's heap (the test runner's and the tokenizer's) alone is a few tens of ms. Parsing these
 * bodies on the event loop instead holds it from about 120 ms (one long string) to 850 ms (numbers).
 */
const STALL_BOUND_MS = 100;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The shared fake reads the first MB of a body as JSON; these bodies are longer, so it answers without reading them. */
function answerWithoutReading(req: IncomingMessage, res: ServerResponse): void {
  const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
  const answer = req.url!.endsWith('/embeddings')
    ? { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], usage: { prompt_tokens: 3, total_tokens: 3 } }
    : { id: 'chatcmpl-big', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'read' } }], usage };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(answer));
}

beforeAll(async () => {
  fake = await startFakeUpstream('up', { respond: answerWithoutReading });
  gw = await startTestGateway(
    [upstream('up', fake.url, 'LARGE_JSON_UPSTREAM_KEY'), model('m', [{ upstream: 'up' }]), plan('pro', ['m', 'service-test'], { concurrentRequests: 50 }), account('acme', 'pro'), apiKey(key)],
    { bodyBudgetBytes: 256 * MB },
  );
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const post = (path: string, body: Buffer, apiKey = key.key) => postBytes(`${gw.url}${path}`, apiKey, body);

/** A body of about `size` bytes: `head`, then `size` bytes of `fill` inside one JSON string, then `tail`. */
function stringBody(head: string, size: number, tail: string, fill = 'a'): Buffer {
  return Buffer.concat([Buffer.from(head), Buffer.alloc(size, fill), Buffer.from(tail)]);
}

const measured = <T>(request: () => Promise<T>) => whileHealthChecked(gw, request);

describe('a body just under 50 MB', () => {
  it('to an upstream model: relayed byte for byte, the event loop never held', async () => {
    const body = stringBody('{"model":"m","messages":[{"role":"user","content":"', 49 * MB, '"}]}');
    const before = fake.requests.length;
    const { result, stallMs } = await measured(() => post('/v1/chat/completions', body));
    expect(result.status).toBe(200);
    const received = fake.requests.slice(before);
    expect(received).toHaveLength(1);
    expect(received[0].bytes).toBe(body.length);
    expect(received[0].sha256).toBe(sha256(body));
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  it('of four million numbers (the costliest shape to parse and to clone): relayed, the loop never held', async () => {
    // Token ids, as embeddings accept them: a value per few bytes, nothing like one long string.
    const ids = Array.from({ length: 4_000_000 }, (_, i) => i % 100_000);
    const body = Buffer.from(JSON.stringify({ model: 'm', input: [ids] }));
    expect(body.length).toBeGreaterThan(20 * MB);
    const before = fake.requests.length;
    const { result, stallMs } = await measured(() => post('/v1/embeddings', body));
    expect(result.status).toBe(200);
    expect(fake.requests.slice(before).map((r) => r.sha256)).toEqual([sha256(body)]);
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  it('to service-test: eight strings of 5 MB, read whole (a piece at a time) and answered, the loop never held', async () => {
    // Each string is flattened in a turn of its own: together they would hold the loop eight times as
    // long. (One string at OpenAI's limit, 10 MiB, is a single copy of about 40 ms on a machine with
    // slow page faults, plus whatever collection its allocation starts: security.test.ts sends one.)
    const text = (i: number) => `${'word '.repeat(MB - 1)}w${i}end`;
    const messages = Array.from({ length: 8 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text(i) }));
    const body = Buffer.from(JSON.stringify({ model: 'service-test', messages }));
    expect(body.length).toBeGreaterThan(40 * MB);
    const { result, stallMs } = await measured(() => post('/v1/chat/completions', body));
    expect(result.status).toBe(200);
    expect(result.json.usage.prompt_tokens).toBeGreaterThan((8 * 5 * MB) / 6);
    // It quotes the last user message, which it read whole.
    expect(result.json.choices[0].message.content).toContain('You wrote: "word word');
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  it('to service-test: one string past OpenAI\'s length limit refused as OpenAI refuses it, never brought to the loop', async () => {
    const body = stringBody('{"model":"service-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"', 45 * MB, ' end"}]}', 'word ');
    const { result, stallMs } = await measured(() => post('/v1/chat/completions', body));
    expectErrorShape(result, 400, 'string_above_max_length');
    expect(result.json.error.param).toBe('messages[1].content');
    expect(result.json.error.message).toBe(`Invalid 'messages[1].content': string too long. Expected a string with maximum length ${OPENAI_MAX_STRING_LENGTH}, but got a string with length ${45 * MB + 4} instead.`);
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  it('malformed at its very end: 400 invalid_json, the loop never held', async () => {
    const body = stringBody('{"model":"m","messages":[{"role":"user","content":"', 49 * MB, '"}');
    const { result, stallMs } = await measured(() => post('/v1/chat/completions', body));
    expectErrorShape(result, 400, 'invalid_json');
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });
});

describe('what the event loop still learns of a large body', () => {
  it('a repeated key: the upstream gets the body as the gateway read it (the last value), never the bytes that read otherwise', async () => {
    const body = stringBody('{"model":"service-test","model":"m","messages":[{"role":"user","content":"', 4 * MB, '"}]}');
    const before = fake.requests.length;
    const answer = await post('/v1/chat/completions', body);
    expect(answer.status).toBe(200);
    const [received] = fake.requests.slice(before);
    const expected = Buffer.from(JSON.stringify(JSON.parse(body.toString())));
    expect(received.sha256).toBe(sha256(expected));
  });

  it('an id referenced deep inside a large member is checked as in a small body', async () => {
    const body = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(2 * MB) }, { type: 'file', file: { file_id: 'file-not-yours' } }] }] }));
    const answer = await post('/v1/chat/completions', body);
    expectErrorShape(answer, 404, 'file_not_found');
    expect(answer.json.error.param).toBe('messages[0].content[1].file.file_id');
  });

  it('the token reservation counts a large member: a plan that cannot hold it refuses it', async () => {
    const body = Buffer.from(JSON.stringify({ model: 'service-test', messages: [{ role: 'user', content: 'word '.repeat(2 * MB) }] }));
    const small = newKey('small', 'tiny');
    registerSecret(small.key);
    await gw.writeManifests([
      upstream('up', fake.url, 'LARGE_JSON_UPSTREAM_KEY'), model('m', [{ upstream: 'up' }]),
      plan('pro', ['m', 'service-test'], { concurrentRequests: 50 }), account('acme', 'pro'), apiKey(key),
      plan('tight', ['service-test'], { tokensPerMinute: 100_000 }), account('tiny', 'tight'), apiKey(small),
    ]);
    const response = await post('/v1/chat/completions', body, small.key);
    // 'word ' × 2 MiB is 10 MiB of characters: about 2.6 million tokens at four characters a token.
    expectErrorShape(response, 400, 'tokens_exceed_limit');
    const estimated = Number(/needs about (\d+) tokens/.exec(response.json.error.message)?.[1]);
    expect(estimated).toBeGreaterThan(2_600_000);
    expect(estimated).toBeLessThan(2_650_000);
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
