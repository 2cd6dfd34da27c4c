// Responses the gateway answers itself (over chat completions, here for an upstream without a
// Responses API) kept in Redis in shared mode: created on one replica, continued with
// previous_response_id, referenced with item_reference, retrieved, listed and deleted on another. service-test's
// item references cross replicas the same way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../gateway/src/config.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-chat-only-0123456789abcdef';
const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';

describe('translated Responses across replicas on Redis', () => {
  let redis: TestRedis;
  let upstream: FakeUpstream;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startFakeUpstream('chat-only');
    const manifests = [
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'vllm' }, spec: { baseURL: upstream.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, responsesAPI: false } },
      model('llama', [{ upstream: 'vllm', model: 'chat-model' }]),
      plan('pro', ['llama', 'service-test']),
      account('acme', 'pro'),
      apiKey(key),
    ];
    const shared = { redis: { ...loadConfig({ TOLLGATE_REDIS_URL: redis.url }).redis!, prefix: `rt-${Date.now()}:` } };
    [a, b] = await Promise.all([startTestGateway(manifests, shared), startTestGateway(manifests, shared)]);
    await Promise.all([a.shared!.redis.waitReady(), b.shared!.redis.waitReady()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await upstream?.close();
    await redis?.close();
  });

  it('continues, references, retrieves and lists on the other replica', async () => {
    const onA = a.client(key.key, { maxRetries: 0 });
    const onB = b.client(key.key, { maxRetries: 0 });
    const first = await onA.responses.create({ model: 'llama', input: 'My name is Ada.' });
    const message = first.output.find((item) => item.type === 'message')!;
    await onB.responses.create({ model: 'llama', input: 'What is my name?', previous_response_id: first.id });
    expect(JSON.parse(upstream.requests.at(-1)!.body).messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'answer from chat-only' },
      { role: 'user', content: 'What is my name?' },
    ]);
    await onB.responses.create({ model: 'llama', input: [{ type: 'item_reference', id: message.id }, { role: 'user', content: 'and now?' }] });
    expect(JSON.parse(upstream.requests.at(-1)!.body).messages).toEqual([
      { role: 'assistant', content: 'answer from chat-only' },
      { role: 'user', content: 'and now?' },
    ]);
    expect((await onB.responses.retrieve(first.id)).output_text).toBe('answer from chat-only');
    expect((await onB.responses.inputItems.list(first.id)).data[0]).toMatchObject({ type: 'message', role: 'user' });
  });

  it('a response deleted on one replica is gone on the other: retrieve, continue and delete again all miss', async () => {
    const onA = a.client(key.key, { maxRetries: 0 });
    const onB = b.client(key.key, { maxRetries: 0 });
    const created = await onA.responses.create({ model: 'llama', input: 'Delete me elsewhere.' });
    expect((await onB.responses.retrieve(created.id)).id).toBe(created.id);
    expect(await onB.responses.delete(created.id)).toMatchObject({ id: created.id, deleted: true });
    await expect(onA.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(onA.responses.inputItems.list(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(onA.responses.create({ model: 'llama', input: 'again', previous_response_id: created.id })).rejects.toMatchObject({ status: 400, error: { code: 'previous_response_not_found' } });
    await expect(onA.responses.delete(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it("service-test's items are referenced from the other replica too", async () => {
    const first = await a.client(key.key).responses.create({ model: 'service-test', input: 'Remember the word quince' });
    const message = first.output.find((item) => item.type === 'message')!;
    const second = await b.client(key.key).responses.create({ model: 'service-test', input: [{ type: 'item_reference', id: message.id }, { role: 'user', content: 'Repeat after me' }] });
    expect(second.status).toBe('completed');
  });
});
