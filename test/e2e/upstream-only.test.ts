import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { API, account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const free = newKey('free-key', 'free-co');
const paid = newKey('paid-key', 'paid-co');
const empty = newKey('empty-key', 'empty-co');

function withCapabilities(resource: ReturnType<typeof model>, capabilities: string[]) {
  return { ...resource, spec: { ...resource.spec, capabilities } };
}

const manifests = [
  upstream('openai', 'https://api.openai.com/v1'),
  model('gpt-4o', [{ upstream: 'openai' }]),
  model('gpt-4o-mini', [{ upstream: 'openai' }]),
  withCapabilities(model('text-embedding-3-small', [{ upstream: 'openai' }]), ['embeddings']),
  withCapabilities(model('assistant-model', [{ upstream: 'openai' }]), ['chat', 'assistants']),
  model('not-in-any-plan', [{ upstream: 'openai' }]),
  plan('pro', ['gpt-4o*', 'text-embedding-3-*', 'assistant-model']),
  { apiVersion: API, kind: 'Plan', metadata: { name: 'hollow' }, spec: { models: ['nothing-matches-*'] } },
  account('free-co'),
  account('paid-co', 'pro'),
  account('empty-co', 'hollow'),
  ...[free, paid, empty].map(apiKey),
];

const requests: Array<[string, string, unknown?]> = [
  ['GET', '/v1/batches'],
  ['POST', '/v1/batches', { input_file_id: 'file-x', endpoint: '/v1/chat/completions', completion_window: '24h' }],
  ['GET', '/v1/batches/batch_abc'],
  ['POST', '/v1/batches/batch_abc/cancel'],
  ['GET', '/v1/threads/thread_abc'],
  ['POST', '/v1/threads', {}],
  ['POST', '/v1/threads/thread_abc/runs', { assistant_id: 'asst_1' }],
  ['GET', '/v1/threads/thread_abc/messages/msg_1'],
  ['DELETE', '/v1/threads/thread_abc'],
];

describe('/v1/batches and /v1/threads before upstream proxying', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests);
  });
  afterAll(() => gw.stop());

  it.each(requests)('%s %s for a free account: 400 unsupported_for_model with the way forward', async (method, pathname, body) => {
    const error = expectErrorShape(await raw(gw, method, pathname, { key: free.key, body }), 400, 'unsupported_for_model');
    expect(error.message).toContain('service-test');
    expect(error.message).toContain(pathname.startsWith('/v1/batches') ? '/v1/batches' : '/v1/threads');
    expect(error.message).toContain('includes no upstream model');
    expect(error.message).toContain('free tier');
    expect(error.message).toContain('paid plan');
    expect(error.param).toBeNull();
  });

  it('a paid account is told which of its models could serve batches (capability hints respected)', async () => {
    const error = expectErrorShape(await raw(gw, 'POST', '/v1/batches', { key: paid.key, body: {} }), 400, 'unsupported_for_model');
    expect(error.message).toContain("plan 'pro'");
    const listed = error.message.slice(error.message.indexOf("plan 'pro'"));
    expect(listed).toContain('gpt-4o, gpt-4o-mini');
    // Declared capabilities without batches rule a model out; models outside the plan never appear.
    expect(listed).not.toContain('text-embedding-3-small');
    expect(listed).not.toContain('assistant-model');
    expect(listed).not.toContain('not-in-any-plan');
    expect(error.message).not.toContain('paid plan');
  });

  it('a paid account is told which of its models could serve threads', async () => {
    const error = expectErrorShape(await raw(gw, 'GET', '/v1/threads/thread_1/runs', { key: paid.key }), 400, 'unsupported_for_model');
    const listed = error.message.slice(error.message.indexOf("plan 'pro'"));
    expect(listed).toContain('assistant-model');
    expect(listed).toContain('gpt-4o');
    expect(listed).not.toContain('text-embedding-3-small');
  });

  it('a plan without upstream models is told so', async () => {
    const error = expectErrorShape(await raw(gw, 'GET', '/v1/batches', { key: empty.key }), 400, 'unsupported_for_model');
    expect(error.message).toContain("plan 'hollow' includes no upstream model");
  });

  it('the SDK surfaces it as BadRequestError for batches and threads', async () => {
    const batchError = await gw
      .client(free.key)
      .batches.create({ input_file_id: 'file-x', endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e) => e);
    expect(batchError).toBeInstanceOf(OpenAI.BadRequestError);
    expect(batchError.code).toBe('unsupported_for_model');

    const threadError = await gw.client(paid.key).beta.threads.create().catch((e) => e);
    expect(threadError).toBeInstanceOf(OpenAI.BadRequestError);
    expect(threadError.message).toContain('gpt-4o');

    const listError = await gw.client(free.key).batches.list().catch((e) => e);
    expect(listError).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('still needs a key, and neighbouring paths are not captured', async () => {
    expectErrorShape(await raw(gw, 'GET', '/v1/batches'), 401, 'invalid_api_key');
    expectErrorShape(await raw(gw, 'GET', '/v1/batchesx', { key: free.key }), 404, 'unknown_url');
    expectErrorShape(await raw(gw, 'GET', '/v1/threadsafe', { key: free.key }), 404, 'unknown_url');
  });
});
