// The OpenAI Agents SDK's basic run (an agent with a function tool, to completion) against Tollgate
// over the Responses API: on service-test, and on a model whose upstream has no Responses API (the
// gateway answers Responses itself). Provider suites run the same agent against their fakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-agents-0123456789abcdef';
const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';
setTracingDisabled(true);

function runnerFor(gw: TestGateway): Runner {
  const openAIClient = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.key, maxRetries: 0 });
  return new Runner({ modelProvider: new OpenAIProvider({ openAIClient, useResponses: true }), tracingDisabled: true });
}

describe('the OpenAI Agents SDK', () => {
  let gw: TestGateway;
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await startFakeUpstream('chat-only');
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'vllm' }, spec: { baseURL: upstream.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, responsesAPI: false } },
      model('llama', [{ upstream: 'vllm', model: 'chat-model' }]),
      plan('pro', ['llama']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('runs an agent with a function tool to completion on service-test', async () => {
    const calls: string[] = [];
    const getWeather = tool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        calls.push(city);
        return `sunny and 21 degrees in ${city}`;
      },
    });
    const agent = new Agent({ name: 'Weather', instructions: 'Answer with the weather.', model: 'service-test', tools: [getWeather] });
    const result = await runnerFor(gw).run(agent, 'What is the weather? Use get_weather.');
    expect(calls).toHaveLength(1);
    expect(result.finalOutput).toContain('sunny and 21 degrees');
  });

  it('runs an agent on a model served over chat completions, streamed', async () => {
    const agent = new Agent({ name: 'Plain', instructions: 'Be brief.', model: 'llama' });
    const result = await runnerFor(gw).run(agent, 'Hello', { stream: true });
    let text = '';
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    expect(text).toBe('chat-only-0 chat-only-1 chat-only-2 chat-only-3 chat-only-4 ');
    expect(result.finalOutput).toBe(text);
  });
});
