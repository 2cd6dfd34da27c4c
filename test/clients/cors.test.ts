// Browsers: CORS preflights answered before authentication, and Access-Control-* headers on every
// answer to an allowed origin (errors and streams included). Off unless configured.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { API, apiKey, newKey, raw } from '../helpers/gateway.ts';
import { startClientWorld, type ClientWorld } from './setup.ts';

const APP = 'https://app.example.com';
const OTHER_APP = 'https://other.example.com';
/** What a browser running the openai SDK asks for. */
const REQUESTED_HEADERS = 'authorization,content-type,x-stainless-arch,x-stainless-lang,x-stainless-os,x-stainless-package-version,x-stainless-retry-count,x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout';

function preflight(world: ClientWorld, origin: string, path = '/v1/chat/completions') {
  return raw(world.gw, 'OPTIONS', path, { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': REQUESTED_HEADERS } });
}

describe('CORS is off by default', () => {
  let world: ClientWorld;
  beforeAll(async () => {
    world = await startClientWorld();
  });
  afterAll(() => world?.stop());

  it('a preflight gets 401 and no Access-Control headers; answers carry none', async () => {
    const answer = await preflight(world, APP);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    const chat = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.freeKey, headers: { origin: APP }, body: { model: 'service-test', messages: [{ role: 'user', content: 'hi' }] } });
    expect(chat.status).toBe(200);
    expect(chat.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS with a global origin list (TOLLGATE_CORS_ORIGINS) and an Account of its own', () => {
  let world: ClientWorld;
  const otherKey = newKey('other-key', 'other-app');
  beforeAll(async () => {
    // other-app's account allows OTHER_APP only; the gateway allows APP for everyone.
    world = await startClientWorld({ corsOrigins: [APP] }, [
      { apiVersion: API, kind: 'Account', metadata: { name: 'other-app' }, spec: { cors: { allowedOrigins: [OTHER_APP] } } },
      apiKey(otherKey),
    ]);
  });
  afterAll(() => world?.stop());

  it('a preflight from an allowed origin is 204, before authentication, echoing the requested headers', async () => {
    const answer = await preflight(world, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(answer.headers.get('access-control-allow-headers')).toBe(REQUESTED_HEADERS);
    expect(answer.headers.get('access-control-allow-methods')).toContain('POST');
    expect(answer.headers.get('vary')).toContain('Origin');
    // An origin nobody allows gets what it got before: no CORS at all.
    const stranger = await preflight(world, 'https://evil.example.com');
    expect(stranger.status).toBe(401);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('JSON answers, errors and streams carry Allow-Origin and Expose-Headers', async () => {
    const headers = { origin: APP };
    const body = { model: 'service-test', messages: [{ role: 'user', content: 'hi' }] };
    const ok = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.freeKey, headers, body });
    const unauthorised = await raw(world.gw, 'POST', '/v1/chat/completions', { headers, body });
    const stream = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.freeKey, headers, body: { ...body, stream: true } });
    const relayed = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.paidKey, headers, body: { ...body, model: 'fake-chat', stream: true } });
    expect([ok.status, unauthorised.status, stream.status, relayed.status]).toEqual([200, 401, 200, 200]);
    expect(stream.text).toContain('data: [DONE]');
    expect(relayed.text).toContain('data: [DONE]');
    for (const answer of [ok, unauthorised, stream, relayed]) {
      expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
      const exposed = answer.headers.get('access-control-expose-headers')!.toLowerCase();
      for (const name of ['x-request-id', 'x-service-request-id', 'x-ratelimit-remaining-requests', 'retry-after', 'retry-after-ms', 'x-should-retry']) expect(exposed).toContain(name);
    }
  });

  it("an Account's own origins count for that account's keys only", async () => {
    // Preflights carry no key, so any account's origin is answered.
    expect((await preflight(world, OTHER_APP)).status).toBe(204);
    const body = { model: 'service-test', messages: [{ role: 'user', content: 'hi' }] };
    const own = await raw(world.gw, 'POST', '/v1/chat/completions', { key: otherKey.key, headers: { origin: OTHER_APP }, body });
    expect(own.status).toBe(200);
    expect(own.headers.get('access-control-allow-origin')).toBe(OTHER_APP);
    // free-app's key from other-app's origin: answered, but not readable by that origin.
    const foreign = await raw(world.gw, 'POST', '/v1/chat/completions', { key: world.freeKey, headers: { origin: OTHER_APP }, body });
    expect(foreign.status).toBe(200);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect(foreign.headers.get('access-control-expose-headers')).toBeNull();
  });

  it('the official SDK works with the headers a browser adds (dangerouslyAllowBrowser)', async () => {
    const client = new OpenAI({ apiKey: world.freeKey, baseURL: world.baseURL, dangerouslyAllowBrowser: true, defaultHeaders: { origin: APP }, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: 'service-test', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(data.choices[0].message.content).toContain('hi');
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
  });
});
