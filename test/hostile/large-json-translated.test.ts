// A string past OpenAI's length limit on the paths that read a request whole to translate it: chat
// and Responses to a translated provider, and the Messages API (translated to service-test, or relayed
// to Anthropic, which also reads it whole to estimate it). Each is refused in its dialect's error
// shape before the string is brought to the event loop (string-length.ts, docs/adr/0021), and the
// provider is never asked; base64 media of the same size is not a text string and is not refused.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAI_MAX_STRING_LENGTH } from '../../gateway/src/http/string-length.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { account, API, apiKey, expectErrorShape, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { pngDataUrl } from '../helpers/fixtures.ts';
import { postBytes } from '../helpers/proxy-tools.ts';
import { MB, registerLogs, registerSecret, whileHealthChecked } from './harness.ts';

const key = newKey('k', 'acme');
registerSecret(key.key);
let gw: TestGateway;
let fake: FakeAnthropic;

/** The bound large-json.test.ts holds the other paths to, for the same reasons. */
const STALL_BOUND_MS = 100;
const LENGTH = 45 * MB;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  process.env.LARGE_TRANSLATED_ANTHROPIC_KEY = registerSecret(fake.apiKey);
  const claude = { apiVersion: API, kind: 'Upstream', metadata: { name: 'claude' }, spec: { provider: 'anthropic', baseURL: fake.url, credentials: { env: 'LARGE_TRANSLATED_ANTHROPIC_KEY' } } };
  gw = await startTestGateway([claude, model('claude', [{ upstream: 'claude', model: 'claude-haiku-4-5' }]), plan('pro', ['claude', 'service-test']), account('acme', 'pro'), apiKey(key)], { bodyBudgetBytes: 256 * MB });
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

/** `head`, `LENGTH` bytes of text inside one JSON string, then `tail`. */
const textBody = (head: string, tail: string) => Buffer.concat([Buffer.from(head), Buffer.alloc(LENGTH, 'word '), Buffer.from(tail)]);

/** Posts `body` while /healthz is asked over and over, and measures the longest stall of the event loop. */
const measured = (path: string, body: Buffer) => whileHealthChecked(gw, () => postBytes(`${gw.url}${path}`, key.key, body));

const tooLong = (param: string) => `Invalid '${param}': string too long. Expected a string with maximum length ${OPENAI_MAX_STRING_LENGTH}, but got a string with length ${LENGTH} instead.`;

describe('a 45 MB text string on a path that translates', () => {
  it('chat completions to Claude: 400 string_above_max_length naming the parameter, Anthropic never asked, the loop never held', async () => {
    const before = fake.requests.length;
    const { result, stallMs } = await measured('/v1/chat/completions', textBody('{"model":"claude","messages":[{"role":"user","content":"', '"}]}'));
    expectErrorShape(result, 400, 'string_above_max_length');
    expect(result.json.error).toMatchObject({ type: 'invalid_request_error', param: 'messages[0].content', message: tooLong('messages[0].content') });
    expect(fake.requests.length).toBe(before);
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  it('Responses to Claude: the same refusal, naming the input', async () => {
    const { result, stallMs } = await measured('/v1/responses', textBody('{"model":"claude","input":[{"role":"user","content":"', '"}]}'));
    expectErrorShape(result, 400, 'string_above_max_length');
    expect(result.json.error.param).toBe('input[0].content');
    expect(stallMs).toBeLessThan(STALL_BOUND_MS);
  });

  for (const [target, modelName] of [['translated to service-test', 'service-test'], ['relayed to Anthropic', 'claude']]) {
    it(`the Messages API ${target}: Anthropic's 400 invalid_request_error in its envelope, the provider never asked`, async () => {
      const before = fake.requests.length;
      const { result, stallMs } = await measured('/v1/messages', textBody(`{"model":"${modelName}","max_tokens":16,"messages":[{"role":"user","content":"`, '"}]}'));
      expect(result.status).toBe(400);
      expect(result.json).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: `messages[0].content: ${tooLong('messages[0].content')}` }, request_id: expect.any(String) });
      expect(fake.requests.length).toBe(before);
      expect(stallMs).toBeLessThan(STALL_BOUND_MS);
    });
  }

  // A body this large is parsed in the worker: `messages` is checked once read whole (it was refused
  // as "not an array" while still there).
  it('the Anthropic SDK gets a BadRequestError from count_tokens, as from Anthropic', async () => {
    const client = new Anthropic({ apiKey: key.key, baseURL: gw.url, maxRetries: 0 });
    const error = await client.messages.countTokens({ model: 'claude', messages: [{ role: 'user', content: 'word '.repeat(OPENAI_MAX_STRING_LENGTH / 5 + 1) }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).message).toContain('string too long');
  });

  it('base64 image data of the same order is media, not text: not refused by the length check', async () => {
    // A real PNG made 12 MB of base64 (past the text limit) by bytes after its end, in Anthropic's
    // image source: service-test reads its header and answers.
    const png = Buffer.from(pngDataUrl(2, 2).split(',')[1], 'base64');
    const data = Buffer.concat([png, Buffer.alloc(9 * MB)]).toString('base64');
    expect(data.length).toBeGreaterThan(OPENAI_MAX_STRING_LENGTH);
    const body = { model: 'service-test', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }, { type: 'text', text: 'what is it?' }] }] };
    const result = await postBytes(`${gw.url}/v1/messages`, key.key, Buffer.from(JSON.stringify(body)));
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text' }] });
  });
});
