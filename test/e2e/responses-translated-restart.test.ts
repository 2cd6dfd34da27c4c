// Stored responses survive a restart in standalone mode: they are kept in the data directory. A
// gateway answers a translated model (an OpenAI-compatible upstream without a Responses API) and
// service-test, is closed, and a new one on the same data directory continues both conversations
// with previous_response_id, retrieves, lists input items, resolves an item_reference — and still
// forgets what was deleted before the restart.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-chat-only-0123456789abcdef';
const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';

describe('stored responses across a restart on the same data directory', () => {
  let upstream: FakeUpstream;
  let dataDir: string;
  const gateways: TestGateway[] = [];
  const manifests = () => [
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'vllm' }, spec: { baseURL: upstream.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, responsesAPI: false } },
    model('llama', [{ upstream: 'vllm', model: 'chat-model' }]),
    plan('pro', ['llama', 'service-test']),
    account('acme', 'pro'),
    apiKey(key),
  ];

  beforeAll(async () => {
    upstream = await startFakeUpstream('chat-only');
    dataDir = await mkdtemp(path.join(tmpdir(), 'tollgate-responses-data-'));
  });
  afterAll(async () => {
    await Promise.all(gateways.map((gw) => gw.stop()));
    await upstream?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('continues, retrieves and references what the gateway before the restart stored', async () => {
    const before = await startTestGateway(manifests(), { dataDir });
    gateways.push(before);
    let client = before.client(key.key);
    const translated = await client.responses.create({ model: 'llama', input: 'My name is Ada.' });
    const streamed = await client.responses.stream({ model: 'llama', input: 'Remember the number 7.' }).finalResponse();
    const local = await client.responses.create({ model: 'service-test', input: 'Hello service-test' });
    const deleted = await client.responses.create({ model: 'llama', input: 'Forget me.' });
    await client.responses.delete(deleted.id);
    await before.close();

    const after = await startTestGateway(manifests(), { dataDir });
    gateways.push(after);
    client = after.client(key.key);
    upstream.requests.length = 0;
    await client.responses.create({ model: 'llama', input: 'What is my name?', previous_response_id: translated.id });
    expect(JSON.parse(upstream.requests.at(-1)!.body).messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'answer from chat-only' },
      { role: 'user', content: 'What is my name?' },
    ]);
    expect((await client.responses.retrieve(streamed.id)).output_text).toBe(streamed.output_text);
    expect((await client.responses.inputItems.list(translated.id)).data[0]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'My name is Ada.' }] });
    // An item of the translated response, referenced after the restart.
    const answer = translated.output.find((item) => item.type === 'message')!;
    await client.responses.create({ model: 'llama', input: [{ type: 'item_reference', id: answer.id }, { role: 'user', content: 'and again?' }] });
    expect(JSON.parse(upstream.requests.at(-1)!.body).messages[0]).toEqual({ role: 'assistant', content: 'answer from chat-only' });
    const continued = await client.responses.create({ model: 'service-test', input: 'Still there?', previous_response_id: local.id });
    expect(continued.status).toBe('completed');
    await expect(client.responses.retrieve(deleted.id)).rejects.toMatchObject({ status: 404 });
  });
});
