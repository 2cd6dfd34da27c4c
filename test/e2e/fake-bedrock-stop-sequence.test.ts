// The fake Bedrock's stop sequences, proven with AWS's own client: a sequence in the reply cuts it
// there with stopReason `stop_sequence`, and the sequence comes back in additionalModelResponseFields
// when the request asks for `/stop_sequence` (as Claude on Bedrock answers), in Converse's JSON and in
// ConverseStream's messageStop event, both decoded by the SDK.
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
let fake: FakeBedrock;
let client: BedrockRuntimeClient;

beforeAll(async () => {
  fake = await startFakeBedrock();
  client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: fake.url, credentials: { accessKeyId: FAKE_ACCESS_KEY, secretAccessKey: FAKE_SECRET_KEY }, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
});
afterAll(async () => {
  await fake.close();
});

const request = (paths?: string[]) => ({
  modelId: CLAUDE,
  messages: [{ role: 'user' as const, content: [{ text: 'alpha beta gamma' }] }],
  inferenceConfig: { stopSequences: ['gamma', 'beta'] },
  ...(paths ? { additionalModelResponseFieldPaths: paths } : {}),
});

describe('the fake Bedrock and stop sequences, driven by the AWS SDK', () => {
  it('Converse: cut at the first sequence in the text, named when asked for', async () => {
    const named = await client.send(new ConverseCommand(request(['/stop_sequence'])));
    expect(named.output?.message?.content).toEqual([{ text: 'You said: alpha ' }]);
    expect(named.stopReason).toBe('stop_sequence');
    expect(named.additionalModelResponseFields).toEqual({ stop_sequence: 'beta' });
    const unnamed = await client.send(new ConverseCommand(request()));
    expect(unnamed.stopReason).toBe('stop_sequence');
    expect(unnamed.additionalModelResponseFields).toBeUndefined();
  });

  it('ConverseStream: the messageStop event carries the stop reason and the field', async () => {
    const answer = await client.send(new ConverseStreamCommand(request(['/stop_sequence'])));
    const events: any[] = [];
    for await (const event of answer.stream!) events.push(event);
    const stop = events.find((e) => e.messageStop)?.messageStop;
    expect(stop).toEqual({ stopReason: 'stop_sequence', additionalModelResponseFields: { stop_sequence: 'beta' } });
    expect(events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('')).toBe('You said: alpha ');
  });

  it('refuses field paths that are not JSON Pointers', async () => {
    const error = await client.send(new ConverseCommand(request(['stop_sequence']))).catch((e) => e);
    expect(error.name).toBe('ValidationException');
  });
});
