// Responses, the Messages API and the OpenAI Agents SDK on a model of every translated provider:
// Anthropic, the Gemini API, Vertex AI and Bedrock, each behind its faithful fake. The gateway answers
// Responses over the provider's chat translation, keeps the responses for continuations, and runs an
// agent's function-tool loop to completion on each.
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';

const API = 'tollgate.dev/v1alpha1';
const key = newKey('k', 'acme');
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'tollgate@proj-1.iam.gserviceaccount.com';
setTracingDisabled(true);

const MODELS = ['claude', 'flash', 'vertex-pro', 'bedrock-claude'] as const;

describe('Responses and agents on every translated provider', () => {
  let anthropic: FakeAnthropic;
  let gemini: FakeGemini;
  let bedrock: FakeBedrock;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    [anthropic, gemini, bedrock] = await Promise.all([startFakeAnthropic(), startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } }), startFakeBedrock()]);
    process.env.TEST_RP_ANTHROPIC = anthropic.apiKey;
    process.env.TEST_RP_GEMINI = gemini.apiKey;
    process.env.TEST_RP_VERTEX = JSON.stringify({ type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', client_email: EMAIL, token_uri: gemini.tokenUri, private_key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() });
    process.env.TEST_RP_AWS_ID = FAKE_ACCESS_KEY;
    process.env.TEST_RP_AWS_SECRET = FAKE_SECRET_KEY;
    const upstream = (name: string, spec: object) => ({ apiVersion: API, kind: 'Upstream', metadata: { name }, spec });
    gw = await startTestGateway([
      upstream('anthropic', { provider: 'anthropic', baseURL: anthropic.url.replace(/\/v1\/?$/, ''), credentials: { env: 'TEST_RP_ANTHROPIC' } }),
      upstream('gemini', { provider: 'gemini', baseURL: gemini.url, credentials: { env: 'TEST_RP_GEMINI' } }),
      upstream('vertex', { provider: 'vertex', baseURL: gemini.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { env: 'TEST_RP_VERTEX' } }),
      upstream('aws', { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { env: 'TEST_RP_AWS_ID' }, secretAccessKey: { env: 'TEST_RP_AWS_SECRET' } } }),
      model('claude', [{ upstream: 'anthropic', model: 'claude-sonnet-4-6' }]),
      model('flash', [{ upstream: 'gemini', model: 'gemini-2.5-flash' }]),
      model('vertex-pro', [{ upstream: 'vertex', model: 'gemini-2.5-pro' }]),
      model('bedrock-claude', [{ upstream: 'aws', model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' }]),
      plan('pro', [...MODELS]),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key, { maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([anthropic?.close(), gemini?.close(), bedrock?.close()]);
  });

  for (const name of MODELS) {
    describe(name, () => {
      it('creates, streams and continues a response', async () => {
        const first = await client.responses.create({ model: name, instructions: 'Be brief.', input: 'Remember the word tangerine' });
        expect(first.status).toBe('completed');
        expect(first.output_text).toContain('tangerine');
        expect(first.usage!.input_tokens).toBeGreaterThan(0);
        const stream = client.responses.stream({ model: name, input: 'Now say banana', previous_response_id: first.id });
        let text = '';
        for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
        const second = await stream.finalResponse();
        expect(second.output_text).toBe(text);
        expect(text).toContain('banana');
        expect((await client.responses.retrieve(second.id)).output_text).toBe(text);
        const items = await client.responses.inputItems.list(second.id);
        expect(items.data).toHaveLength(1);
        expect(items.data[0]).toMatchObject({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Now say banana' }] });
      });

      it("runs an Agents SDK agent's function-tool loop to completion", async () => {
        const seen: string[] = [];
        const lookup = tool({
          name: 'lookup',
          description: 'Look a word up',
          parameters: z.object({ word: z.string() }),
          execute: async ({ word }) => {
            seen.push(word);
            return `definition-of-${word.length}`;
          },
        });
        const openAIClient = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key.key, maxRetries: 0 });
        const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient, useResponses: true }), tracingDisabled: true });
        const result = await runner.run(new Agent({ name: 'Dictionary', instructions: 'Use your tool.', model: name, tools: [lookup] }), 'Please use lookup for tangerine');
        expect(seen).toHaveLength(1);
        expect(String(result.finalOutput)).toContain(`definition-of-${seen[0].length}`);
      });

      it('answers the Messages API to the Anthropic SDK (relayed to Anthropic, translated for the others)', async () => {
        const claude = new Anthropic({ baseURL: gw.url, apiKey: key.key, maxRetries: 0 });
        const message = await claude.messages.stream({ model: name, max_tokens: 200, messages: [{ role: 'user', content: 'Say grapefruit' }] }).finalMessage();
        expect(message.stop_reason).toBe('end_turn');
        expect((message.content.find((b) => b.type === 'text') as Anthropic.TextBlock).text).toContain('grapefruit');
      });
    });
  }
});
