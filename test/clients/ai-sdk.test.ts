// The Vercel AI SDK (`ai` + `@ai-sdk/openai`) against the real gateway, used the way applications
// use it: createOpenAI({ baseURL, apiKey }) and nothing else changed.
import { createOpenAI } from '@ai-sdk/openai';
import { embed, embedMany, experimental_generateSpeech as generateSpeech, experimental_transcribe as transcribe, generateImage, generateObject, generateText, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { png, shortWav, startClientWorld, twoPagePdf, type ClientWorld } from './setup.ts';

let world: ClientWorld;
beforeAll(async () => {
  world = await startClientWorld();
});
afterAll(() => world?.stop());

const provider = (key: string) => createOpenAI({ baseURL: world.baseURL, apiKey: key });
const weatherTool = () =>
  tool({
    description: 'Current weather of a city',
    inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
    execute: async ({ city, unit }) => ({ city, unit, temperature: 21 }),
  });

describe('AI SDK against service-test', () => {
  it('generateText with the default (Responses) provider, then a second turn that references the first by item id', async () => {
    const openai = provider(world.freeKey);
    const first = await generateText({ model: openai('service-test'), prompt: 'Hello there' });
    expect(first.text).toContain('You wrote: "Hello there"');
    const messages: ModelMessage[] = [{ role: 'user', content: 'Hello there' }, ...first.response.messages, { role: 'user', content: 'And again' }];
    const bodies: any[] = [];
    const recording = createOpenAI({ baseURL: world.baseURL, apiKey: world.freeKey, fetch: async (url, init) => (bodies.push(JSON.parse(String(init!.body))), fetch(url, init)) });
    const second = await generateText({ model: recording('service-test'), messages });
    // The SDK sent the earlier answer as an item reference; the gateway resolved it.
    expect(bodies[0].input.some((item: any) => item.type === 'item_reference')).toBe(true);
    expect(second.text).toContain('The conversation has 3 messages (2 user, 1 assistant)');
  });

  it('streamText with the chat provider and the Responses provider', async () => {
    const openai = provider(world.freeKey);
    for (const model of [openai.chat('service-test'), openai.responses('service-test')]) {
      const result = streamText({ model, prompt: 'Stream this' });
      let text = '';
      for await (const piece of result.textStream) text += piece;
      expect(text).toContain('You wrote: "Stream this"');
      expect((await result.usage).inputTokens).toBeGreaterThan(0);
    }
  });

  it('tools with a zod schema, run by the SDK over several steps (chat and Responses)', async () => {
    const openai = provider(world.freeKey);
    for (const model of [openai.chat('service-test'), openai('service-test')]) {
      const result = await generateText({ model, tools: { getWeather: weatherTool() }, stopWhen: stepCountIs(4), prompt: 'What is the weather in Paris?' });
      expect(result.steps.length).toBe(2);
      expect(result.steps[0].toolCalls[0].toolName).toBe('getWeather');
      expect(result.text).toContain('getWeather returned');
    }
  });

  it('generateObject validates the answer against the zod schema', async () => {
    const openai = provider(world.freeKey);
    for (const model of [openai.chat('service-test'), openai('service-test')]) {
      const { object } = await generateObject({ model, schema: z.object({ title: z.string(), tags: z.array(z.string()), score: z.number().int().min(0).max(10) }), prompt: 'Describe a book' });
      expect(typeof object.title).toBe('string');
      expect(object.score).toBeGreaterThanOrEqual(0);
    }
  });

  it('file parts (a PDF) reach service-test through chat and Responses, described with their pages', async () => {
    const openai = provider(world.freeKey);
    for (const model of [openai.chat('service-test'), openai('service-test')]) {
      const { text } = await generateText({
        model,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise this' }, { type: 'file', data: twoPagePdf(), mediaType: 'application/pdf', filename: 'report.pdf' }] }],
      });
      expect(text).toContain("File 1 'report.pdf' is application/pdf");
      expect(text).toContain('2 pages');
    }
  });

  it('provider options the SDK maps onto official parameters are accepted (promptCacheRetention)', async () => {
    const openai = provider(world.freeKey);
    for (const model of [openai.chat('service-test'), openai('service-test')]) {
      const { text } = await generateText({ model, prompt: 'Cache me', providerOptions: { openai: { promptCacheRetention: '24h', promptCacheKey: 'k1' } } });
      expect(text).toContain('Cache me');
    }
  });

  it('the completion provider uses POST /v1/completions', async () => {
    const { text, finishReason } = await generateText({ model: provider(world.freeKey).completion('service-test'), prompt: 'Complete me', maxOutputTokens: 200 });
    expect(text).toContain('Complete me');
    expect(finishReason).toBe('stop');
  });

  it('embed and embedMany', async () => {
    const model = provider(world.freeKey).embedding('service-test');
    const one = await embed({ model, value: 'sunny day' });
    expect(one.embedding.length).toBeGreaterThan(0);
    const many = await embedMany({ model, values: ['a', 'b', 'c'] });
    expect(many.embeddings).toHaveLength(3);
    expect(many.embeddings[0]).not.toEqual(many.embeddings[1]);
  });

  it('generateImage, speech and transcription', async () => {
    const openai = provider(world.freeKey);
    const image = await generateImage({ model: openai.image('service-test'), prompt: 'a lighthouse', size: '256x256' });
    expect(Buffer.from(image.image.uint8Array).subarray(1, 4).toString()).toBe('PNG');
    const speech = await generateSpeech({ model: openai.speech('service-test'), text: 'Hello world', outputFormat: 'wav' });
    expect(Buffer.from(speech.audio.uint8Array).subarray(0, 4).toString()).toBe('RIFF');
    const transcript = await transcribe({ model: openai.transcription('service-test'), audio: shortWav() });
    expect(typeof transcript.text).toBe('string');
  });

  it('an image part given as a PNG reaches service-test', async () => {
    const { text } = await generateText({ model: provider(world.freeKey)('service-test'), messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', image: png(8, 6), mediaType: 'image/png' }] }] });
    expect(text).toContain('PNG image of 8×6 pixels');
  });
});

describe('AI SDK against an upstream model (the fake upstream)', () => {
  it('generateText and streamText through chat, generateText through Responses and completions, embed', async () => {
    const openai = provider(world.paidKey);
    const chat = await generateText({ model: openai.chat('fake-chat'), prompt: 'Hi' });
    expect(chat.text).toBe('answer from fake');
    const streamed = streamText({ model: openai.chat('fake-chat'), prompt: 'Hi' });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toContain('fake-0');
    expect((await streamed.usage).outputTokens).toBe(5);
    const responses = await generateText({ model: openai('fake-chat'), prompt: 'Hi' });
    expect(responses.text).toBe('answer from fake');
    const completion = await generateText({ model: openai.completion('fake-chat'), prompt: 'Hi' });
    expect(completion.text).toBe('completion from fake');
    const vector = await embed({ model: openai.embedding('fake-chat'), value: 'x' });
    expect(vector.embedding).toEqual([0.1, 0.2, 0.3]);
    // Every request reached the upstream under its upstream name, with the upstream's key.
    const paths = world.fake.requests.map((r) => r.path);
    expect(paths).toEqual(expect.arrayContaining(['/v1/chat/completions', '/v1/responses', '/v1/completions', '/v1/embeddings']));
    for (const request of world.fake.requests) expect(request.headers.authorization).toBe('Bearer sk-upstream-secret');
    expect(world.fake.requests.every((r) => !r.body.includes('"fake-chat"'))).toBe(true);
  });
});
