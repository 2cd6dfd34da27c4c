// A gateway whose model `llama` is on an OpenAI-compatible upstream marked `responsesAPI: false` (the
// fake upstream, model `chat-model`), so that Responses and the Messages API reach it over chat
// completions; for the suites that drive that path. Registers its own hooks: the gateway starts before
// the suite, the fake's behaviour and recorded requests are reset after each test.
import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { account, API, apiKey, model, plan, startTestGateway, type TestGateway, type TestKey } from './gateway.ts';

export interface ChatOnlyGateway {
  upstream: FakeUpstream;
  gw: TestGateway;
  /** The openai SDK with `key`, without retries. */
  client: OpenAI;
  /** The body of the last chat request the upstream received. */
  sentChat(): any;
}

export function chatOnlyGateway(key: TestKey): ChatOnlyGateway {
  process.env.TEST_UPSTREAM_KEY = 'sk-chat-only-0123456789abcdef';
  const suite = { sentChat: () => JSON.parse(suite.upstream.requests.at(-1)!.body) } as ChatOnlyGateway;
  beforeAll(async () => {
    suite.upstream = await startFakeUpstream('chat-only');
    suite.gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'vllm' }, spec: { baseURL: suite.upstream.url, credentials: { env: 'TEST_UPSTREAM_KEY' }, responsesAPI: false } },
      model('llama', [{ upstream: 'vllm', model: 'chat-model' }]),
      plan('pro', ['llama']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    suite.client = suite.gw.client(key.key, { maxRetries: 0 });
  });
  afterAll(async () => {
    await suite.gw?.stop();
    await suite.upstream?.close();
  });
  afterEach(() => {
    suite.upstream.behave({});
    suite.upstream.requests.length = 0;
  });
  return suite;
}
