// Proves the fake Bedrock faithful: AWS's own client (@aws-sdk/client-bedrock-runtime), signing with
// its own SigV4 and decoding with its own event-stream decoder, is pointed at the fake. If the fake's
// signature check, frames, CRCs, headers or error shapes were not AWS's, these calls would fail.
// (The client's default handler speaks HTTP/2 to Bedrock; the fake, like the gateway, speaks HTTP/1.1.)
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, InvokeModelCommand, ModelStreamErrorException, ThrottlingException, ValidationException } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
let fake: FakeBedrock;

function client(secretAccessKey = FAKE_SECRET_KEY, region = 'us-east-1') {
  return new BedrockRuntimeClient({ region, endpoint: fake.url, credentials: { accessKeyId: FAKE_ACCESS_KEY, secretAccessKey }, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
}

async function collect(stream: AsyncIterable<any>) {
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterAll(async () => {
  await fake.close();
});

describe('the fake Bedrock, driven by the AWS SDK', () => {
  it('answers Converse, with the model id double-encoded in the signature the SDK made', async () => {
    const answer = await client().send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hello there' }] }] }));
    expect(answer.output?.message?.content?.[0]).toEqual({ text: 'You said: hello there' });
    expect(answer.stopReason).toBe('end_turn');
    expect(answer.usage).toMatchObject({ inputTokens: 2, outputTokens: 4, totalTokens: 6 });
    const logged = fake.requests.at(-1)!;
    expect(logged.rawPath).toBe('/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse');
    expect(logged.modelId).toBe(CLAUDE);
    expect(logged.refused).toBeNull();
  });

  it('refuses a wrong secret as InvalidSignatureException', async () => {
    const error = await client('another-secret').send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })).catch((e) => e);
    expect(error.name).toBe('InvalidSignatureException');
    expect(error.$metadata.httpStatusCode).toBe(403);
  });

  it('refuses a signature scoped to another region', async () => {
    const error = await client(FAKE_SECRET_KEY, 'eu-west-1').send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })).catch((e) => e);
    expect(error.name).toBe('InvalidSignatureException');
  });

  it('validates like Bedrock: alternation, first user turn, blank text', async () => {
    const send = (messages: any[]) => client().send(new ConverseCommand({ modelId: CLAUDE, messages })).catch((e) => e);
    const notAlternating = await send([{ role: 'user', content: [{ text: 'a' }] }, { role: 'user', content: [{ text: 'b' }] }]);
    expect(notAlternating).toBeInstanceOf(ValidationException);
    expect(notAlternating.message).toMatch(/alternate between user and assistant/);
    expect((await send([{ role: 'assistant', content: [{ text: 'a' }] }])).message).toMatch(/start with a user message/);
    expect((await send([{ role: 'user', content: [{ text: '  ' }] }])).message).toMatch(/blank/);
  });

  it('streams ConverseStream events the SDK decodes, tool calls included', async () => {
    const answer = await client().send(
      new ConverseStreamCommand({
        modelId: CLAUDE,
        messages: [{ role: 'user', content: [{ text: 'use get_weather for Paris' }] }],
        toolConfig: { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }] },
      }),
    );
    const events = await collect(answer.stream!);
    const kinds = events.map((e) => Object.keys(e)[0]);
    expect(kinds[0]).toBe('messageStart');
    expect(kinds.slice(-2)).toEqual(['messageStop', 'metadata']);
    expect(events.find((e) => e.contentBlockStart)?.contentBlockStart.start.toolUse.name).toBe('get_weather');
    const input = events.filter((e) => e.contentBlockDelta?.delta?.toolUse).map((e) => e.contentBlockDelta.delta.toolUse.input).join('');
    expect(JSON.parse(input)).toEqual({ city: 'use get_weather for Paris' });
    expect(events.find((e) => e.messageStop).messageStop.stopReason).toBe('tool_use');
  });

  it('decodes a stream written byte by byte', async () => {
    fake.next({ byteByByte: true });
    const answer = await client().send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'one two three four five' }] }] }));
    const events = await collect(answer.stream!);
    const text = events.filter((e) => e.contentBlockDelta?.delta?.text).map((e) => e.contentBlockDelta.delta.text).join('');
    expect(text).toBe('You said: one two three four five');
  });

  it('raises exception frames as the SDK’s own exception classes', async () => {
    fake.next({ streamException: { afterEvents: 2, type: 'throttlingException', message: 'Too many tokens' } });
    const throttled = await client().send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    const error = await collect(throttled.stream!).catch((e) => e);
    expect(error).toBeInstanceOf(ThrottlingException);
    expect(error.message).toBe('Too many tokens');

    fake.next({ streamException: { afterEvents: 1, type: 'modelStreamErrorException', message: 'model broke' } });
    const broken = await client().send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    expect(await collect(broken.stream!).catch((e) => e)).toBeInstanceOf(ModelStreamErrorException);
  });

  it('raises injected errors before the stream as the SDK’s classes', async () => {
    fake.next({ error: { status: 429, type: 'ThrottlingException', message: 'Rate exceeded' } });
    const error = await client().send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })).catch((e) => e);
    expect(error).toBeInstanceOf(ThrottlingException);
    expect(error.$metadata.httpStatusCode).toBe(429);
  });

  it('a corrupted frame fails the SDK’s CRC check', async () => {
    fake.next({ corruptEvent: 1 });
    const answer = await client().send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    const error = await collect(answer.stream!).catch((e) => e);
    expect(String(error)).toMatch(/checksum/i);
  });

  it('answers Titan and Cohere embeddings through InvokeModel', async () => {
    const titan = await client().send(new InvokeModelCommand({ modelId: 'amazon.titan-embed-text-v2:0', contentType: 'application/json', body: JSON.stringify({ inputText: 'hello world', dimensions: 256 }) }));
    const titanBody = JSON.parse(Buffer.from(titan.body).toString());
    expect(titanBody.embedding).toHaveLength(256);
    expect(titanBody.inputTextTokenCount).toBe(2);
    const cohere = await client().send(new InvokeModelCommand({ modelId: 'cohere.embed-english-v3', contentType: 'application/json', body: JSON.stringify({ texts: ['a', 'b'], input_type: 'search_query', embedding_types: ['float'] }) }));
    expect(JSON.parse(Buffer.from(cohere.body).toString()).embeddings.float).toHaveLength(2);
  });
});
