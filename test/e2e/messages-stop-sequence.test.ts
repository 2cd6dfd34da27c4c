// A translated Messages answer that stopped on one of the request's `stop_sequences` says so as
// Anthropic does (`stop_reason: "stop_sequence"`, `stop_sequence: "<the one>"`), JSON and stream,
// wherever the backend knows it: service-test (which cuts the answer itself), Claude on Bedrock
// (`stopReason: stop_sequence`, the sequence in `additionalModelResponseFields`), other Bedrock models
// (which do not name it: the request's only sequence, else null), Anthropic itself as a translated
// target. Gemini does not say: `end_turn`. The channel is internal: the same answer to an OpenAI
// client is OpenAI's shape exactly (`finish_reason: "stop"`, nothing more), checked against OpenAI's
// OpenAPI document.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { answerProblems, eventProblems, sseData } from '../helpers/openai-oracle.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE_ON_AWS = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const key = newKey('k', 'acme');

let anthropic: FakeAnthropic;
let bedrock: FakeBedrock;
let gemini: FakeGemini;
let gw: TestGateway;
let client: Anthropic;

beforeAll(async () => {
  [anthropic, bedrock, gemini] = await Promise.all([startFakeAnthropic(), startFakeBedrock(), startFakeGemini()]);
  process.env.STOPSEQ_ANTHROPIC = anthropic.apiKey;
  process.env.STOPSEQ_GEMINI = gemini.apiKey;
  process.env.STOPSEQ_AWS_ID = FAKE_ACCESS_KEY;
  process.env.STOPSEQ_AWS_SECRET = FAKE_SECRET_KEY;
  gw = await startTestGateway([
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: anthropic.url, credentials: { env: 'STOPSEQ_ANTHROPIC' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'gemini' }, spec: { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'STOPSEQ_GEMINI' } } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'STOPSEQ_AWS_ID' }, secretAccessKey: { env: 'STOPSEQ_AWS_SECRET' } } } },
    model('bedrock-claude', [{ upstream: 'aws', model: CLAUDE_ON_AWS }]),
    model('bedrock-nova', [{ upstream: 'aws', model: 'amazon.nova-pro-v1:0' }]),
    model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
    // Anthropic first, Bedrock as its fallback: not Anthropic only, so the Messages API is translated.
    model('claude-mixed', [{ upstream: 'anthropic', model: 'claude-sonnet-4-6', priority: 0 }, { upstream: 'aws', model: CLAUDE_ON_AWS, priority: 1 }]),
    plan('pro', ['*']),
    account('acme', 'pro'),
    apiKey(key),
  ]);
  client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([anthropic?.close(), bedrock?.close(), gemini?.close()]);
});

const ask = (model: string, text: string, stop_sequences: string[]) => ({ model, max_tokens: 200, stop_sequences, messages: [{ role: 'user' as const, content: text }] });

/** The answer as JSON and as a stream (the SDK's helper): stop reason, sequence and text of each. */
async function both(request: ReturnType<typeof ask>) {
  const json = await client.messages.create(request);
  const stream = client.messages.stream(request);
  const deltas: Array<{ stop_reason: unknown; stop_sequence: unknown }> = [];
  stream.on('streamEvent', (event) => {
    if (event.type === 'message_delta') deltas.push({ stop_reason: event.delta.stop_reason, stop_sequence: event.delta.stop_sequence });
  });
  const streamed = await stream.finalMessage();
  expect(deltas).toHaveLength(1);
  expect(deltas[0]).toEqual({ stop_reason: streamed.stop_reason, stop_sequence: streamed.stop_sequence });
  const textOf = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return {
    json: { stop_reason: json.stop_reason, stop_sequence: json.stop_sequence, text: textOf(json) },
    stream: { stop_reason: streamed.stop_reason, stop_sequence: streamed.stop_sequence, text: textOf(streamed) },
  };
}

describe('a stop sequence hit, through the Messages API on translated models', () => {
  it('service-test cuts at the sequence that comes first and names it', async () => {
    const whole = await client.messages.create({ model: 'service-test', max_tokens: 200, messages: [{ role: 'user', content: 'Tell me about stop sequences please' }] });
    expect(whole.stop_reason).toBe('end_turn');
    const text = (whole.content[0] as Anthropic.TextBlock).text;
    const words = text.split(/\s+/).filter((w) => w.length > 3);
    // Two sequences that occur, the later-listed one earlier in the text: the one named is where it stopped.
    const [early, late] = [words[1]!, words.at(-1)!];
    const got = await both(ask('service-test', 'Tell me about stop sequences please', [late, early]));
    const expected = { stop_reason: 'stop_sequence', stop_sequence: early, text: text.slice(0, text.indexOf(early)) };
    expect(got).toEqual({ json: expected, stream: expected });
    // A sequence that never occurs: the turn ended on its own.
    const none = await both(ask('service-test', 'Tell me about stop sequences please', ['zzz-never']));
    expect(none.json).toEqual({ stop_reason: 'end_turn', stop_sequence: null, text });
    expect(none.stream).toEqual(none.json);
  });

  it('Claude on Bedrock: the sequence Bedrock names (asked for with additionalModelResponseFieldPaths)', async () => {
    const got = await both(ask('bedrock-claude', 'alpha beta gamma delta', ['delta', 'beta']));
    const expected = { stop_reason: 'stop_sequence', stop_sequence: 'beta', text: 'You said: alpha ' };
    expect(got).toEqual({ json: expected, stream: expected });
    expect(bedrock.requests.at(-1)!.body).toMatchObject({ additionalModelResponseFieldPaths: ['/stop_sequence'], inferenceConfig: { stopSequences: ['delta', 'beta'] } });
  });

  it('another Bedrock model does not name it: the request’s only sequence, or null among several', async () => {
    const one = await both(ask('bedrock-nova', 'alpha beta gamma', ['gamma']));
    expect(one.json).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'gamma', text: 'You said: alpha beta ' });
    expect(one.stream).toEqual(one.json);
    expect(bedrock.requests.at(-1)!.body!.additionalModelResponseFieldPaths).toBeUndefined();
    const several = await both(ask('bedrock-nova', 'alpha beta gamma', ['gamma', 'beta']));
    expect(several.json).toEqual({ stop_reason: 'stop_sequence', stop_sequence: null, text: 'You said: alpha ' });
    expect(several.stream).toEqual(several.json);
  });

  it('Anthropic as a translated target: the stop sequence it reported', async () => {
    const got = await both(ask('claude-mixed', 'alpha beta gamma delta', ['delta', 'gamma']));
    expect(got.json).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'gamma' });
    expect(got.stream).toEqual(got.json);
    expect(got.json.text).not.toContain('gamma');
    expect(anthropic.requests.at(-1)!.body).toMatchObject({ stop_sequences: ['delta', 'gamma'] });
  });

  it('Gemini does not say which stop ended the turn: end_turn', async () => {
    const got = await both(ask('flash', 'alpha beta gamma', ['beta']));
    expect(got.json).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    expect(got.stream).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
  });
});

describe('the same stop to an OpenAI client', () => {
  it('is finish_reason "stop" in OpenAI’s shape exactly, JSON and stream, nothing added', async () => {
    for (const model of ['bedrock-claude', 'claude-mixed', 'service-test']) {
      const body = { model, messages: [{ role: 'user', content: 'alpha beta gamma delta' }], stop: ['delta', 'beta'] };
      const response = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await response.json();
      expect(answerProblems('POST', '/v1/chat/completions', 200, json), model).toBe('');
      expect(json.choices[0].finish_reason).toBe('stop');
      expect(JSON.stringify(json)).not.toMatch(/stop_sequence/);
      expect(Object.keys(json.choices[0]).sort()).toEqual(['finish_reason', 'index', 'logprobs', 'message']);

      const streamed = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
      const text = await streamed.text();
      expect(text).not.toMatch(/stop_sequence/);
      const events = sseData(text);
      for (const event of events) expect(eventProblems('POST', '/v1/chat/completions', event), model).toBe('');
      expect(events.some((e) => (e as { choices?: Array<{ finish_reason?: string }> }).choices?.[0]?.finish_reason === 'stop')).toBe(true);
    }
  });
});
