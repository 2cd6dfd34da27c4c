// LangChain JS (`@langchain/openai`) against the real gateway, configured as its docs say for an
// OpenAI-compatible server: `configuration: { baseURL }` and the key.
import { tool } from '@langchain/core/tools';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { ChatOpenAI, OpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startClientWorld, type ClientWorld } from './setup.ts';

let world: ClientWorld;
beforeAll(async () => {
  world = await startClientWorld();
});
afterAll(() => world?.stop());

const chat = (key: string, model: string, extra: Record<string, unknown> = {}) => new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: world.baseURL }, maxRetries: 0, ...extra });
const getWeather = tool(async ({ city }) => `It is 21 degrees in ${city}.`, {
  name: 'get_weather',
  description: 'Current weather of a city',
  schema: z.object({ city: z.string() }),
});

describe('LangChain against service-test', () => {
  it('invoke and stream, with Chat Completions and with the Responses API', async () => {
    for (const extra of [{}, { useResponsesApi: true }]) {
      const model = chat(world.freeKey, 'service-test', extra);
      const answer = await model.invoke('Hello from LangChain');
      expect(answer.text).toContain('Hello from LangChain');
      expect(answer.usage_metadata?.input_tokens).toBeGreaterThan(0);
      let streamed = '';
      for await (const chunk of await model.stream('Stream from LangChain')) streamed += typeof chunk.content === 'string' ? chunk.content : chunk.content.map((c: any) => c.text ?? '').join('');
      expect(streamed).toContain('Stream from LangChain');
    }
  });

  it('bindTools: the model calls the tool, the tool result goes back, the model answers', async () => {
    for (const extra of [{}, { useResponsesApi: true }]) {
      const model = chat(world.freeKey, 'service-test', extra).bindTools([getWeather]);
      const question = new HumanMessage('What is the weather in Paris?');
      const first = (await model.invoke([question])) as AIMessage;
      expect(first.tool_calls?.[0]?.name).toBe('get_weather');
      const call = first.tool_calls![0];
      const result = await getWeather.invoke(call);
      expect(result).toBeInstanceOf(ToolMessage);
      const final = await model.invoke([question, first, result]);
      expect(JSON.stringify(final.content)).toContain('get_weather returned');
    }
  });

  it('withStructuredOutput returns an object matching the zod schema', async () => {
    for (const extra of [{}, { useResponsesApi: true }]) {
      const model = chat(world.freeKey, 'service-test', extra).withStructuredOutput(z.object({ name: z.string(), age: z.number().int() }));
      const person = await model.invoke('Invent a person');
      expect(typeof person.name).toBe('string');
      expect(Number.isInteger(person.age)).toBe(true);
    }
  });

  it('embeddings and the legacy OpenAI (completions) class', async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'service-test', apiKey: world.freeKey, configuration: { baseURL: world.baseURL } });
    const vectors = await embeddings.embedDocuments(['one', 'two']);
    expect(vectors).toHaveLength(2);
    expect((await embeddings.embedQuery('one')).length).toBe(vectors[0].length);
    const llm = new OpenAI({ model: 'service-test', apiKey: world.freeKey, configuration: { baseURL: world.baseURL }, maxTokens: 200, maxRetries: 0 });
    expect(await llm.invoke('Complete this')).toContain('Complete this');
    let streamed = '';
    for await (const piece of await llm.stream('Stream this')) streamed += piece;
    expect(streamed).toContain('Stream this');
  });
});

describe('LangChain against an upstream model (the fake upstream)', () => {
  it('invoke, stream, Responses mode, embeddings and the legacy OpenAI class', async () => {
    const model = chat(world.paidKey, 'fake-chat');
    expect((await model.invoke('Hi')).content).toBe('answer from fake');
    let streamed = '';
    for await (const chunk of await model.stream('Hi')) streamed += chunk.content as string;
    expect(streamed).toBe('fake-0 fake-1 fake-2 fake-3 fake-4 ');
    const responses = chat(world.paidKey, 'fake-chat', { useResponsesApi: true });
    expect(JSON.stringify((await responses.invoke('Hi')).content)).toContain('answer from fake');
    const embeddings = new OpenAIEmbeddings({ model: 'fake-chat', apiKey: world.paidKey, configuration: { baseURL: world.baseURL } });
    expect((await embeddings.embedQuery('x')).map((v) => Math.round(v * 10) / 10)).toEqual([0.1, 0.2, 0.3]);
    const llm = new OpenAI({ model: 'fake-chat', apiKey: world.paidKey, configuration: { baseURL: world.baseURL }, maxRetries: 0 });
    expect(await llm.invoke('Hi')).toBe('completion from fake');
    let text = '';
    for await (const piece of await llm.stream('Hi')) text += piece;
    expect(text).toBe('fake-0 fake-1 fake-2 ');
    const completions = world.fake.requests.filter((r) => r.path === '/v1/completions').map((r) => JSON.parse(r.body));
    expect(completions.map((c) => c.model)).toEqual(['upstream-model', 'upstream-model']);
  });
});
