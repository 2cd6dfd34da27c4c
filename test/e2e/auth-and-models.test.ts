import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';

const free = newKey('free-key', 'free-co');
const paid = newKey('paid-key', 'paid-co');
const revoked = newKey('revoked-key', 'free-co', { revoked: true });
const expired = newKey('expired-key', 'free-co', { expiresAt: '2020-01-01T00:00:00Z' });
const orphan = newKey('orphan-key', 'no-such-account');

function manifests(paidPlan: string | undefined) {
  return [
    upstream('openai', 'https://api.openai.com/v1'),
    model('gpt-4o', [{ upstream: 'openai' }]),
    model('gpt-4o-mini', [{ upstream: 'openai' }]),
    model('text-embedding-3-small', [{ upstream: 'openai' }]),
    plan('pro', ['gpt-4o*']),
    account('free-co'),
    account('paid-co', paidPlan),
    ...[free, paid, revoked, expired, orphan].map(apiKey),
  ];
}

describe('authentication and the model catalogue', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests('pro'));
  });
  afterAll(() => gw.stop());

  it('lists only service-test for a free account, through the SDK', async () => {
    const models = await gw.client(free.key).models.list();
    expect(models.data.map((m) => m.id)).toEqual(['service-test']);
    expect(models.data[0]).toMatchObject({ object: 'model', owned_by: 'tollgate' });
    expect(typeof models.data[0].created).toBe('number');
  });

  it("lists service-test plus the plan's models (globs) for a paid account", async () => {
    const models = await gw.client(paid.key).models.list();
    expect(models.data.map((m) => m.id)).toEqual(['service-test', 'gpt-4o', 'gpt-4o-mini']);
    const one = await gw.client(paid.key).models.retrieve('gpt-4o-mini');
    expect(one).toMatchObject({ id: 'gpt-4o-mini', object: 'model' });
  });

  it('retrieving a model outside the catalogue is 404 model_not_found', async () => {
    const response = await raw(gw, 'GET', '/v1/models/gpt-4o', { key: free.key });
    expectErrorShape(response, 404, 'model_not_found');
  });

  it.each([
    ['missing header', {}],
    ['another scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['malformed key', { authorization: 'Bearer sk-not-ours' }],
    ['wrong prefix', { authorization: `Bearer xx_sk_${'a'.repeat(43)}` }],
    ['unknown key', { authorization: `Bearer tg_sk_${'a'.repeat(43)}` }],
    ['revoked key', { authorization: `Bearer ${revoked.key}` }],
    ['expired key', { authorization: `Bearer ${expired.key}` }],
    ['key of a missing account', { authorization: `Bearer ${orphan.key}` }],
  ])('%s: 401 invalid_api_key', async (_label, headers) => {
    const response = await raw(gw, 'GET', '/v1/models', { headers: headers as Record<string, string> });
    const error = expectErrorShape(response, 401, 'invalid_api_key');
    expect(error.message).not.toContain('a'.repeat(20));
  });

  it('the SDK surfaces 401 as AuthenticationError with the request id', async () => {
    const error = await gw.client(revoked.key).models.list().catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error.requestID).toMatch(/^req_/);
  });

  it('never logs a key', async () => {
    await gw.client(free.key).models.list();
    await raw(gw, 'GET', '/v1/models', { headers: { authorization: `Bearer ${revoked.key}` } });
    for (const k of [free, paid, revoked]) {
      expect(gw.logText()).not.toContain(k.key);
      expect(gw.logText()).not.toContain(k.key.slice(6, 30));
    }
    const line = gw.logs.find((l) => l.route === '/v1/models' && l.status === 200);
    expect(line).toMatchObject({ method: 'GET', apiKey: 'free-key', account: 'free-co' });
    expect(line).toHaveProperty('requestId');
    expect(line).toHaveProperty('durationMs');
  });

  it('changing the plan ("payment") changes the catalogue of the same key on the next request', async () => {
    const client = gw.client(paid.key);
    await gw.writeManifests(manifests(undefined));
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['service-test']);
    await gw.writeManifests(manifests('pro'));
    expect((await client.models.list()).data.map((m) => m.id)).toContain('gpt-4o');
  });
});

describe('errors outside the routes', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(manifests('pro'), { trustedProxies: ['127.0.0.1'] });
  });
  afterAll(() => gw.stop());

  it('unknown route: 404 in the OpenAI shape', async () => {
    expectErrorShape(await raw(gw, 'GET', '/v1/does-not-exist', { key: free.key }), 404, 'unknown_url');
    expectErrorShape(await raw(gw, 'GET', '/nothing-here'), 404, 'unknown_url');
  });

  it('wrong method: 405 with Allow', async () => {
    const response = await raw(gw, 'DELETE', '/v1/models', { key: free.key });
    expectErrorShape(response, 405, 'method_not_allowed');
    expect(response.headers.get('allow')).toContain('GET');
  });

  it('health endpoints answer without a key', async () => {
    expect((await raw(gw, 'GET', '/healthz')).status).toBe(200);
    expect((await raw(gw, 'GET', '/readyz')).json).toMatchObject({ status: 'ready' });
  });

  it('keeps a request id given by a trusted proxy in front (TOLLGATE_TRUSTED_PROXIES)', async () => {
    const response = await raw(gw, 'GET', '/v1/models', { key: free.key, headers: { 'x-service-request-id': 'edge-1234567890' } });
    expect(response.headers.get('x-service-request-id')).toBe('edge-1234567890');
    expect(response.headers.get('x-request-id')).toBe('edge-1234567890');
  });
});
