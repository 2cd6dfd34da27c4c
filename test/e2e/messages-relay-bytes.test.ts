// The Messages API relayed to a model served only by Anthropic is byte-exact both ways: the fake
// Anthropic records the raw body it received and the raw bytes it wrote, and the test compares them
// with what the client sent and what the client received. Only the credential differs (a header: the
// client's Tollgate key replaced by the Upstream's). Formatting JSON.stringify would not reproduce
// (spacing, key order, `1.0`, `\u` escapes) proves no re-serialisation on the way in; a stream the fake
// writes byte by byte proves none on the way out. Images pass through as they are; models.list
// answers in Anthropic's format.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';
import { pngDataUrl } from '../helpers/fixtures.ts';

const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';
const PNG = pngDataUrl(4, 4).split(',')[1];

/** A body as a client might write it by hand: what a parse-and-serialise on the way would change. */
const handWritten = (stream: boolean) =>
  `{ "max_tokens" : 64,\n  "model":"claude-sonnet-4-6", "temperature": 1.0,${stream ? ' "stream": true,' : ''}\n` +
  `  "messages": [ {"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"${PNG}"}},` +
  `{"type":"text","text":"Caf\\u00e9 \\/ what is in this picture?"}]} ] }`;

describe('the Messages API relay to Anthropic, byte by byte', () => {
  let fake: FakeAnthropic;
  let gw: TestGateway;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    process.env.TEST_RB_ANTHROPIC_KEY = fake.apiKey;
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: fake.url, credentials: { env: 'TEST_RB_ANTHROPIC_KEY' } } },
      model('claude-sonnet-4-6', [{ upstream: 'anthropic' }]),
      model('claude-haiku-4-5', [{ upstream: 'anthropic' }]),
      plan('pro', ['claude-*']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const headers = { 'x-api-key': key.key, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14', 'content-type': 'application/json' };
  const answeredBytes = () => Buffer.concat(fake.requests.at(-1)!.answered);

  /** The request reached Anthropic with the client's bytes, its Anthropic headers, and the Upstream's key only. */
  function expectRelayedAsSent(sent: Buffer, clientHeaders: Record<string, string>) {
    const received = fake.requests.at(-1)!;
    expect(received.raw.equals(sent)).toBe(true);
    expect(received.headers['anthropic-version']).toBe(clientHeaders['anthropic-version']);
    expect(received.headers['anthropic-beta']).toBe(clientHeaders['anthropic-beta']);
    expect(received.headers['x-api-key']).toBe(fake.apiKey);
    expect(JSON.stringify(received.headers)).not.toContain(key.key);
  }

  it('a JSON request and its answer: the bytes the client wrote reach Anthropic, the bytes Anthropic wrote reach the client', async () => {
    const body = handWritten(false);
    const response = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
    const got = Buffer.from(await response.arrayBuffer());
    expectRelayedAsSent(Buffer.from(body), headers);
    expect(got.equals(answeredBytes())).toBe(true);
    // The image went to the model as sent: the fake names what it saw.
    expect(JSON.parse(got.toString()).content[0].text).toContain('[images: image image/png base64]');
    expect(JSON.parse(got.toString()).content[0].text).toContain('Café / what is in this picture?');
  });

  it('a stream Anthropic writes byte by byte reaches the client byte-exact, and is a well-formed Messages stream', async () => {
    fake.next({ byteByByte: true });
    const body = handWritten(true);
    const response = await fetch(`${gw.url}/v1/messages?beta=true`, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const got = Buffer.from(await response.arrayBuffer());
    expectRelayedAsSent(Buffer.from(body), headers);
    expect(fake.requests.at(-1)!.path).toBe('/v1/messages?beta=true');
    const wrote = answeredBytes();
    // Byte by byte: many writes, one per byte.
    expect(fake.requests.at(-1)!.answered.length).toBe(wrote.length);
    expect(got.equals(wrote)).toBe(true);
    const parsed = parseAnthropicStream(got.toString());
    expect(parsed.stopReason).toBe('end_turn');
    expect(parsed.blocks[0].text).toContain('[images: image image/png base64]');
  });

  it("the Anthropic SDK's own request (an image, a stream) and count_tokens go through byte-exact", async () => {
    const sentBySdk: Buffer[] = [];
    let sdkHeaders: Record<string, string> = {};
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: key.key,
      maxRetries: 0,
      fetch: (url, init) => {
        sentBySdk.push(Buffer.from(String(init?.body)));
        sdkHeaders = Object.fromEntries(new Headers(init?.headers).entries());
        return fetch(url, init);
      },
    });
    const beta = 'interleaved-thinking-2025-05-14';
    const content: Anthropic.ContentBlockParam[] = [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'Name it' }];
    const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content }] }, { headers: { 'anthropic-beta': beta } });
    const message = await stream.finalMessage();
    expectRelayedAsSent(sentBySdk.at(-1)!, sdkHeaders);
    expect(sdkHeaders['anthropic-beta']).toBe(beta);
    expect((message.content[0] as Anthropic.TextBlock).text).toBe('You said: Name it [images: image image/png base64]');

    const counted = await client.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content }] }, { headers: { 'anthropic-beta': beta } });
    expect(fake.requests.at(-1)!.path).toBe('/v1/messages/count_tokens');
    expectRelayedAsSent(sentBySdk.at(-1)!, sdkHeaders);
    expect(JSON.stringify(counted)).toBe(answeredBytes().toString());
  });

  it("models.list through the gateway answers in Anthropic's format, entries shaped as Anthropic's own", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
    const direct = new Anthropic({ baseURL: fake.url, apiKey: fake.apiKey, maxRetries: 0 });
    const viaGateway = await client.models.list();
    const ids = viaGateway.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['claude-sonnet-4-6', 'claude-haiku-4-5']));
    const anthropicOwn = (await direct.models.list()).data[0];
    for (const entry of viaGateway.data) expect(Object.keys(entry).sort()).toEqual(Object.keys(anthropicOwn).sort());
    expect(viaGateway.has_more).toBe(false);
  });
});
