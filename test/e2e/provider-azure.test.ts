// Azure OpenAI's deployments API (`provider: azure`): the body and answers are OpenAI's; the key goes
// in `api-key`, the deployment (the target's model) in the path, the API version in the query.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { parseManifests } from '../../gateway/src/resources/manifests.ts';

const SECRET = 'azure-key-0123456789abcdef0123456789';
process.env.TEST_AZURE_KEY = SECRET;
const key = newKey('k', 'acme');
const API = 'tollgate.dev/v1alpha1';

describe('provider: azure', () => {
  let azure: FakeUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    azure = await startFakeUpstream('azure');
    const origin = azure.url.replace(/\/v1$/, '');
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'azure-east' }, spec: { provider: 'azure', baseURL: origin, credentials: { env: 'TEST_AZURE_KEY' }, azure: { apiVersion: '2024-10-21' } } },
      model('gpt-4o', [{ upstream: 'azure-east', model: 'my-gpt4o-deployment' }]),
      plan('pro', ['gpt-4o']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await azure?.close();
  });

  it('sends chat to the deployment with api-key and api-version, and relays the answer under the public name', async () => {
    const answer = await gw.client(key.key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello Azure' }] });
    expect(answer.model).toBe('gpt-4o');
    expect(answer.choices[0].message.content).toBeTruthy();
    const sent = azure.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/my-gpt4o-deployment/chat/completions?api-version=2024-10-21');
    expect(sent.headers['api-key']).toBe(SECRET);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.headers['api-key']).not.toBe(key.key);
  });

  it('streams, and embeddings go to the same deployment path', async () => {
    const stream = await gw.client(key.key).chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'stream please' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(azure.requests.at(-1)!.path).toBe('/openai/deployments/my-gpt4o-deployment/chat/completions?api-version=2024-10-21');
    const vectors = await gw.client(key.key).embeddings.create({ model: 'gpt-4o', input: ['one', 'two'] });
    expect(vectors.data).toHaveLength(2);
    expect(azure.requests.at(-1)!.path).toBe('/openai/deployments/my-gpt4o-deployment/embeddings?api-version=2024-10-21');
  });

  it('bad provider combinations are refused, naming the field', () => {
    const doc = (spec: Record<string, unknown>) => `apiVersion: ${API}\nkind: Upstream\nmetadata: {name: u}\nspec: ${JSON.stringify(spec)}\n`;
    const refused = (spec: Record<string, unknown>) => {
      const result = parseManifests(doc(spec), 'f.yaml');
      return result.ok ? [] : result.errors;
    };
    expect(refused({ provider: 'azure', baseURL: 'https://x.openai.azure.com' }).join()).toMatch(/spec\.azure.*azure\.apiVersion/);
    expect(refused({ provider: 'vertex' }).join()).toMatch(/spec\.vertex.*vertex\.project/);
    expect(refused({ provider: 'bedrock' }).join()).toMatch(/spec\.bedrock.*bedrock\.region/);
    expect(refused({ baseURL: undefined }).join()).toMatch(/spec\.baseURL.*required/);
    expect(refused({ provider: 'openai', baseURL: 'http://x/v1', vertex: { project: 'p', location: 'l' } }).join()).toMatch(/vertex settings apply only/);
    expect(refused({ provider: 'bedrock', bedrock: { region: 'us-east-1', accessKeyId: { env: 'A' } } }).join()).toMatch(/accessKeyId and secretAccessKey go together/);
    expect(refused({ provider: 'anthropic', credentials: { env: 'K' } })).toEqual([]);
    expect(refused({ provider: 'bedrock', bedrock: { region: 'eu-west-3' } })).toEqual([]);
  });
});
