// Vertex AI's service-account auth against the fake's OAuth endpoint, which verifies the RS256
// assertion with the test's public key: a token minted once and shared by concurrent requests,
// refreshed before it expires, forgotten after a 401 so the retry gets a new one, and every failure a
// ProviderAuthError that says what is wrong without the key. The Gemini API's key goes in a header.
import { generateKeyPairSync } from 'node:crypto';
import type { CredentialRef, Upstream } from '@tollgate/crds';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderAuthError } from '../../gateway/src/providers/auth.ts';
import { gemini, vertex } from '../../gateway/src/providers/gemini/index.ts';
import { vertexTokenAuth } from '../../gateway/src/providers/gemini/auth.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const privatePem = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const EMAIL = 'gw@proj-1.iam.gserviceaccount.com';
let fake: FakeGemini;
let serviceAccount: string;

const upstream = (name: string): Upstream =>
  ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name }, spec: { provider: 'vertex', vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { env: 'SA_KEY' } } }) as Upstream;
const reader = (value: string | undefined) => (_ref: CredentialRef) => value;

async function call(auth: ReturnType<typeof vertexTokenAuth>, up: Upstream, read = reader(serviceAccount)) {
  const request = vertex.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: 'gemini-2.5-pro', upstream: up }, false);
  const url = new URL(request.path, fake.url);
  const headers = await auth.authorize(request, { upstream: up, url }, read, new AbortController().signal);
  const response = await fetch(url, { method: 'POST', headers: { ...request.headers, ...headers }, body: request.body });
  return { status: response.status, body: await response.json() as any, headers };
}

beforeAll(async () => {
  fake = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } });
  serviceAccount = JSON.stringify({ type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', private_key: privatePem, client_email: EMAIL, token_uri: fake.tokenUri });
});
afterAll(() => fake.close());

describe('vertex service-account auth', () => {
  it('mints one token for concurrent requests and reuses it', async () => {
    const auth = vertexTokenAuth();
    const before = fake.tokenRequests;
    const answers = await Promise.all([1, 2, 3, 4].map(() => call(auth, upstream('a'))));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.headers.authorization)).size).toBe(1);
    await call(auth, upstream('a'));
    expect(fake.tokenRequests - before).toBe(1);
    expect(auth.secrets!(upstream('a'), reader(serviceAccount))).toEqual([answers[0].headers.authorization.slice('Bearer '.length)]);
  });

  it('refreshes a token before it expires', async () => {
    let now = Date.now();
    const auth = vertexTokenAuth(() => now);
    const first = await call(auth, upstream('b'));
    now += 3599_000 - 4 * 60_000; // within the refresh margin of the token's hour
    const second = await call(auth, upstream('b'));
    expect(second.status).toBe(200);
    expect(second.headers.authorization).not.toBe(first.headers.authorization);
  });

  it('forgets a token Vertex refused as expired, so the retry succeeds with a new one', async () => {
    const auth = vertexTokenAuth();
    const first = await call(auth, upstream('c'));
    fake.expireTokens();
    const refused = await call(auth, upstream('c'));
    expect(refused.status).toBe(401);
    expect(JSON.stringify(refused.body)).toContain('ACCESS_TOKEN_EXPIRED');
    expect(vertex.translation.error(401, {}, JSON.stringify(refused.body))).toMatchObject({ status: 502, credentialRefused: true });
    expect(auth.refused!(upstream('c'), 403, { headers: {}, text: JSON.stringify(refused.body) })).toBe(false);
    expect(auth.refused!(upstream('c'), 401, { headers: {}, text: JSON.stringify(refused.body) })).toBe(true);
    const retried = await call(auth, upstream('c'));
    expect(retried.status).toBe(200);
    expect(retried.headers.authorization).not.toBe(first.headers.authorization);
  });

  it('says what is wrong, without the key, when no token can be had', async () => {
    const auth = vertexTokenAuth();
    fake.refuseNextToken('invalid_grant', 'Invalid JWT Signature.');
    const refused = await call(auth, upstream('d')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProviderAuthError);
    expect((refused as Error).message).toContain(`refused the service account ${EMAIL} (invalid_grant: Invalid JWT Signature.)`);
    expect((refused as Error).message).not.toContain('PRIVATE KEY');

    const missing = await call(auth, upstream('e'), reader(undefined)).catch((e: unknown) => e);
    expect((missing as Error).message).toBe("Upstream 'e' reads its credentials from the variable SA_KEY, which is not set.");
    const notJson = await call(auth, upstream('f'), reader('not json')).catch((e: unknown) => e);
    expect((notJson as Error).message).toContain('not a service-account key');
    const badPem = await call(auth, upstream('g'), reader(JSON.stringify({ client_email: EMAIL, private_key: 'garbage', token_uri: fake.tokenUri }))).catch((e: unknown) => e);
    expect((badPem as Error).message).toContain('not a PKCS#8 PEM RSA key');
    const unreachable = await call(auth, upstream('h'), reader(JSON.stringify({ client_email: EMAIL, private_key: privatePem, token_uri: 'http://127.0.0.1:1/token' }))).catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ProviderAuthError);
    expect((unreachable as Error).message).toContain('could not be reached');
  });

  it('puts the Gemini API key in x-goog-api-key, never in the URL', async () => {
    const up = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'k' }, spec: { provider: 'gemini', credentials: { env: 'K' } } } as Upstream;
    const request = gemini.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: 'gemini-2.5-flash', upstream: up }, false);
    const url = new URL(request.path, fake.url);
    const headers = await gemini.auth.authorize(request, { upstream: up, url }, reader(fake.apiKey), new AbortController().signal);
    expect(headers).toEqual({ 'x-goog-api-key': fake.apiKey });
    expect(url.search).not.toContain(fake.apiKey);
    const response = await fetch(url, { method: 'POST', headers: { ...request.headers, ...headers }, body: request.body });
    expect(response.status).toBe(200);
    const probe = gemini.translation.probe(up);
    const listed = await fetch(new URL(probe.path, fake.url), { headers });
    expect(listed.status).toBe(200);
    // The probe asks for the whole list, so that the operator can count the models offered.
    const { models, nextPageToken } = (await listed.json()) as { models: Array<{ name: string }>; nextPageToken?: string };
    expect(models.map((m) => m.name)).toContain('models/gemini-2.5-flash');
    expect(nextPageToken).toBeUndefined();
  });

  it('probes Vertex with a countTokens call the fake answers', async () => {
    const auth = vertexTokenAuth();
    const probe = vertex.translation.probe(upstream('p'));
    const url = new URL(probe.path, fake.url);
    const headers = await auth.authorize(probe, { upstream: upstream('p'), url }, reader(serviceAccount), new AbortController().signal);
    const response = await fetch(url, { method: probe.method, headers: { ...probe.headers, ...headers }, body: probe.body });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { totalTokens: number }).totalTokens).toBeGreaterThan(0);
  });
});
