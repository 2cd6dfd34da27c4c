// Proves the fake Bedrock's prompt cache and thinking checks faithful with AWS's own client
// (@aws-sdk/client-bedrock-runtime): the SDK serialises cachePoint blocks (system, message content,
// tools) and adaptive thinking its own way, and parses the cache usage the fake reports. A cached
// prefix is written once and read back by a request that repeats it; misplaced cache points and a
// thinking style the model does not take are refused as AWS refuses them (ValidationException).
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, ValidationException, type Message, type SystemContentBlock, type Tool } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { MIN_CACHED_TOKENS } from '../fakes/bedrock-cache.ts';

const SONNET_45 = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const OPUS_46 = 'us.anthropic.claude-opus-4-6-v1';
const OPUS_47 = 'global.anthropic.claude-opus-4-7';
/** A system prompt long enough to be cached (its words are its tokens in the fake). */
const MANUAL = Array.from({ length: MIN_CACHED_TOKENS + 200 }, (_, i) => `rule${i}`).join(' ');
const CACHE_POINT = { cachePoint: { type: 'default' as const } };

let fake: FakeBedrock;
const client = () => new BedrockRuntimeClient({ region: 'us-east-1', endpoint: fake.url, credentials: { accessKeyId: FAKE_ACCESS_KEY, secretAccessKey: FAKE_SECRET_KEY }, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
const converse = (input: Omit<ConstructorParameters<typeof ConverseCommand>[0], 'modelId'> & { modelId?: string }) => client().send(new ConverseCommand({ modelId: SONNET_45, ...input }));

beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterAll(async () => {
  await fake.close();
});

describe('the fake Bedrock prompt cache, driven by the AWS SDK', () => {
  const tools: Tool[] = [{ toolSpec: { name: 'lookup', description: 'Looks a rule up', inputSchema: { json: { type: 'object', properties: { rule: { type: 'string' } } } } } }, CACHE_POINT];
  const system: SystemContentBlock[] = [{ text: MANUAL }, CACHE_POINT];
  const ask = (question: string): Message[] => [{ role: 'user', content: [{ text: question }] }];

  it('writes the prefix before a cache point once, then reads it back for a request that repeats it', async () => {
    const first = await converse({ system, toolConfig: { tools }, messages: ask('What does rule7 say?') });
    expect(first.usage).toMatchObject({ cacheWriteInputTokens: MIN_CACHED_TOKENS + 200, cacheReadInputTokens: 0, inputTokens: 4 });
    const sent = fake.requests.at(-1)!.body;
    // What the SDK put on the wire: each cache point its own element, after the block it closes.
    expect(sent.system).toEqual([{ text: MANUAL }, CACHE_POINT]);
    expect(sent.toolConfig.tools[1]).toEqual(CACHE_POINT);

    const second = await converse({ system, toolConfig: { tools }, messages: ask('And rule8?') });
    expect(second.usage).toMatchObject({ cacheReadInputTokens: MIN_CACHED_TOKENS + 200, cacheWriteInputTokens: 0, inputTokens: 2 });
    expect(second.usage!.totalTokens).toBe(second.usage!.inputTokens! + second.usage!.outputTokens! + MIN_CACHED_TOKENS + 200);
  });

  it('streams the cache usage in the metadata event the SDK decodes', async () => {
    const streamed = await client().send(new ConverseStreamCommand({ modelId: SONNET_45, system, toolConfig: { tools }, messages: ask('rule9 please') }));
    let usage: Record<string, number | undefined> | undefined;
    for await (const event of streamed.stream!) if (event.metadata) usage = event.metadata.usage as typeof usage;
    expect(usage).toMatchObject({ cacheReadInputTokens: MIN_CACHED_TOKENS + 200, cacheWriteInputTokens: 0 });
  });

  it('extends the cache at a later point in the messages: the shared prefix is read, the rest written', async () => {
    const history: Message[] = [
      { role: 'user', content: [{ text: 'Remember the manual.' }, CACHE_POINT] },
      { role: 'assistant', content: [{ text: 'Noted.' }] },
      { role: 'user', content: [{ text: 'Now rule10.' }] },
    ];
    const answer = await converse({ system, toolConfig: { tools }, messages: history });
    expect(answer.usage).toMatchObject({ cacheReadInputTokens: MIN_CACHED_TOKENS + 200, cacheWriteInputTokens: 3 });
  });

  it('caches nothing below the minimum prefix, without an error', async () => {
    const answer = await converse({ system: [{ text: 'short manual' }, CACHE_POINT], messages: ask('hi') });
    expect(answer.usage).toMatchObject({ cacheReadInputTokens: 0, cacheWriteInputTokens: 0, inputTokens: 3 });
  });

  it('refuses a cache point with nothing before it, in messages, system and tools', async () => {
    const cases = [
      { messages: [{ role: 'user' as const, content: [CACHE_POINT, { text: 'hi' }] }] },
      { system: [CACHE_POINT, { text: 'rules' }], messages: ask('hi') },
      { toolConfig: { tools: [CACHE_POINT, tools[0]] }, messages: ask('hi') },
    ];
    for (const input of cases) {
      const error = await converse(input).catch((e) => e);
      expect(error).toBeInstanceOf(ValidationException);
      expect(error.message).toMatch(/cache point cannot be the first block/);
    }
  });

  it('refuses a Tool element that is both a toolSpec and a cachePoint (the SDK sends both members as given)', async () => {
    const both = { toolSpec: tools[0].toolSpec, ...CACHE_POINT } as unknown as Tool;
    const error = await converse({ toolConfig: { tools: [both] }, messages: ask('hi') }).catch((e) => e);
    expect(error).toBeInstanceOf(ValidationException);
    expect(error.message).toBe('Tool object at toolConfig.tools.0 can only set one of the following keys: toolSpec, cachePoint.');
    expect(fake.requests.at(-1)!.body.toolConfig.tools[0]).toHaveProperty('cachePoint');
  });

  it('refuses more than four cache points, and a cache point on a model that does not cache', async () => {
    const five = [{ text: 'a' }, CACHE_POINT, { text: 'b' }, CACHE_POINT, { text: 'c' }, CACHE_POINT, { text: 'd' }, CACHE_POINT, { text: 'e' }, CACHE_POINT];
    const tooMany = await converse({ messages: [{ role: 'user', content: five }] }).catch((e) => e);
    expect(tooMany).toBeInstanceOf(ValidationException);
    expect(tooMany.message).toMatch(/A maximum of 4 blocks with cache_control may be provided\. Found 5\./);
    const llama = await converse({ modelId: 'meta.llama3-3-70b-instruct-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }, CACHE_POINT] }] }).catch((e) => e);
    expect(llama).toBeInstanceOf(ValidationException);
    expect(llama.message).toMatch(/does not support prompt caching/);
  });
});

describe('the fake Bedrock thinking checks, driven by the AWS SDK', () => {
  const think = (modelId: string, fields: Record<string, unknown>) => converse({ modelId, messages: [{ role: 'user', content: [{ text: 'think hard' }] }], inferenceConfig: { maxTokens: 4096 }, additionalModelRequestFields: fields as never });

  it('Claude Opus 4.7 and newer take adaptive thinking only, with the wording Bedrock relays', async () => {
    const refused = await think(OPUS_47, { thinking: { type: 'enabled', budget_tokens: 2048 } }).catch((e) => e);
    expect(refused).toBeInstanceOf(ValidationException);
    expect(refused.message).toBe('The model returned the following errors: "thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.');
    const adaptive = await think(OPUS_47, { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
    expect(adaptive.output?.message?.content?.[0]).toMatchObject({ reasoningContent: { reasoningText: { text: 'Thinking about: think hard' } } });
  });

  it('Claude 4.6 takes either; Claude 4.5 refuses adaptive thinking; an unknown type is refused', async () => {
    await expect(think(OPUS_46, { thinking: { type: 'adaptive' }, output_config: { effort: 'max' } })).resolves.toBeDefined();
    await expect(think(OPUS_46, { thinking: { type: 'enabled', budget_tokens: 2048 } })).resolves.toBeDefined();
    const older = await think(SONNET_45, { thinking: { type: 'adaptive' } }).catch((e) => e);
    expect(older).toBeInstanceOf(ValidationException);
    expect(older.message).toMatch(/adaptive thinking is not supported/);
    const unknown = await think(OPUS_46, { thinking: { type: 'auto' } }).catch((e) => e);
    expect(unknown.message).toMatch(/thinking.type must be enabled or adaptive/);
    const effort = await think(OPUS_46, { thinking: { type: 'adaptive' }, output_config: { effort: 'extreme' } }).catch((e) => e);
    expect(effort.message).toMatch(/output_config.effort/);
  });
});
