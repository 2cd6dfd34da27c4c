// A Vertex upstream with no `credentials`, as on GKE with Workload Identity or on Cloud Run: the
// gateway gets its token from Google's Application Default Credentials — here the metadata server (a
// fake reached through GCE_METADATA_HOST, as Google's libraries allow), then a gcloud authorized_user
// file named by GOOGLE_APPLICATION_CREDENTIALS. The official openai SDK calls a model on it: one token
// fetch for concurrent requests, a new one before the old expires, a 401 from Vertex answered with a
// fresh token and one retry, and a clear 502 naming what was tried when there is no token to be had.
// Google's own google-auth-library is pointed at the fake first, to prove it answers as Google does.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Compute, UserRefreshClient } from 'google-auth-library';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { METADATA_TOKEN_PATH, startFakeGoogleIdentity, USER, type FakeGoogleIdentity } from '../fakes/google-identity.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { waitFor } from '../helpers/wait.ts';

const API = 'tollgate.dev/v1alpha1';
const GOOGLE_VARIABLES = ['GOOGLE_APPLICATION_CREDENTIALS', 'CLOUDSDK_CONFIG', 'GCE_METADATA_HOST', 'GCE_METADATA_IP'] as const;
const saved = Object.fromEntries(GOOGLE_VARIABLES.map((name) => [name, process.env[name]]));
const key = newKey('k', 'acme');

describe('provider: vertex with Application Default Credentials', () => {
  let dir: string;
  let vertex: FakeGemini;
  let identity: FakeGoogleIdentity;
  let gw: TestGateway;
  let client: OpenAI;
  const ask = (content: string) => client.chat.completions.create({ model: 'vertex-pro', messages: [{ role: 'user', content }] });

  beforeAll(async () => {
    for (const name of GOOGLE_VARIABLES) delete process.env[name];
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-adc-'));
    vertex = await startFakeGemini();
    identity = await startFakeGoogleIdentity((token) => vertex.acceptToken(token.value, token.expiresAt));
    // No gcloud login on this machine: an empty config directory, and the metadata server is the fake.
    process.env.CLOUDSDK_CONFIG = path.join(dir, 'gcloud');
    process.env.GCE_METADATA_HOST = identity.host;
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'vertex' }, spec: { provider: 'vertex', baseURL: vertex.url, vertex: { project: 'proj-1', location: 'us-central1' } } },
      model('vertex-pro', [{ upstream: 'vertex', model: 'gemini-2.5-pro' }]),
      plan('pro', ['vertex-pro']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([vertex?.close(), identity?.close()]);
    await rm(dir, { recursive: true, force: true });
    for (const name of GOOGLE_VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });
  beforeEach(() => {
    vertex.requests.length = 0;
  });

  it("the fake answers as Google's do: google-auth-library gets a token from its metadata server and its refresh grant", async () => {
    const compute = await new Compute().getAccessToken();
    expect(compute.token).toBe(identity.issued.at(-1)!.value);
    expect(identity.metadataCalls.at(-1)).toMatchObject({ flavor: 'Google' });
    const user = new UserRefreshClient({ clientId: USER.clientId, clientSecret: USER.clientSecret, refreshToken: USER.refreshToken, endpoints: { oauth2TokenUrl: identity.tokenUri } });
    expect((await user.getAccessToken()).token).toBe(identity.issued.at(-1)!.value);
    const revoked = new UserRefreshClient({ clientId: USER.clientId, clientSecret: USER.clientSecret, refreshToken: '1//revoked', endpoints: { oauth2TokenUrl: identity.tokenUri } });
    await expect(revoked.getAccessToken()).rejects.toThrow(/invalid_grant/);
    // Without the header the metadata server refuses, and says so with its own header.
    const bare = await fetch(`${identity.url}${METADATA_TOKEN_PATH}`);
    expect([bare.status, bare.headers.get('metadata-flavor')]).toEqual([403, 'Google']);
  });

  it('concurrent requests share one token fetched once from the metadata server; JSON and stream', async () => {
    const before = identity.metadataCalls.length;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => ask(`together ${i}`)));
    expect(answers.map((a) => a.choices[0].message.content)).toEqual(Array.from({ length: 6 }, (_, i) => `You said: together ${i}`));
    const stream = await client.chat.completions.create({ model: 'vertex-pro', stream: true, messages: [{ role: 'user', content: 'streamed' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('You said: streamed');
    expect(identity.metadataCalls.slice(before)).toEqual([{ path: `${METADATA_TOKEN_PATH}?scopes=${encodeURIComponent('https://www.googleapis.com/auth/cloud-platform')}`, flavor: 'Google' }]);
    const token = identity.issued.at(-1)!.value;
    expect(new Set(vertex.requests.map((r) => r.headers.authorization))).toEqual(new Set([`Bearer ${token}`]));
    expect(gw.logText()).not.toContain(token);
  });

  it('a token is replaced before it expires, without Vertex ever seeing an expired one', async () => {
    // Tokens that live 4 s: the gateway uses each for at most half its life, so the new one comes
    // with two seconds to spare (a loaded machine's pauses between requests do not eat them).
    identity.lifetimeSeconds = 4;
    try {
      // The long-lived token goes (a 401 and a retry); from here on every ask is one Vertex request.
      vertex.expireTokens();
      expect((await ask('short-lived')).choices[0].message.content).toBe('You said: short-lived');
      const first = identity.issued.at(-1)!;
      vertex.requests.length = 0;
      let asked = 0;
      await waitFor(
        async () => {
          asked++;
          return (await ask('again')).choices[0].message.content === 'You said: again' && identity.issued.at(-1) !== first;
        },
        10_000,
        'a second short-lived token',
      );
      const second = identity.issued.at(-1)!;
      expect(second.issuedAt).toBeLessThan(first.expiresAt);
      expect(identity.issued.indexOf(second)).toBe(identity.issued.indexOf(first) + 1);
      // No request was refused and retried: Vertex never saw the first token after it expired.
      expect(vertex.requests).toHaveLength(asked);
      expect(vertex.requests.at(-1)!.headers.authorization).toBe(`Bearer ${second.value}`);
      expect(vertex.requests.filter((r) => r.headers.authorization === `Bearer ${first.value}`).length).toBe(asked - 1);
    } finally {
      identity.lifetimeSeconds = 3599;
    }
  });

  it('a 401 from Vertex (the token revoked early) fetches a new token and retries once; the client sees only the answer', async () => {
    expect((await ask('warm')).choices[0].message.content).toBe('You said: warm');
    const fetched = identity.metadataCalls.length;
    const old = identity.issued.at(-1)!.value;
    vertex.expireTokens();
    vertex.requests.length = 0;
    expect((await ask('after revocation')).choices[0].message.content).toBe('You said: after revocation');
    expect(identity.metadataCalls.length).toBe(fetched + 1);
    expect(vertex.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${old}`, `Bearer ${identity.issued.at(-1)!.value}`]);
  });

  it('a metadata server that does not answer is a 502 upstream_auth_failed naming what was tried, with no token in it', async () => {
    const closed = await freePort();
    process.env.GCE_METADATA_HOST = `127.0.0.1:${closed}`;
    try {
      const error = await ask('no metadata').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      const apiError = error as InstanceType<typeof OpenAI.APIError>;
      expect(apiError.status).toBe(502);
      expect(apiError.error).toMatchObject({ code: 'upstream_auth_failed' });
      const message = (apiError.error as { message: string }).message;
      expect(message).toContain("Upstream 'vertex' has no credentials; Application Default Credentials tried GOOGLE_APPLICATION_CREDENTIALS (not set)");
      expect(message).toContain('GOOGLE_APPLICATION_CREDENTIALS');
      expect(message).toContain(path.join(dir, 'gcloud', 'application_default_credentials.json'));
      expect(message).toContain(`the metadata server http://127.0.0.1:${closed}${METADATA_TOKEN_PATH}`);
      expect(message).toContain('could not be reached (ECONNREFUSED)');
      for (const token of identity.issued) {
        expect(JSON.stringify(apiError.error)).not.toContain(token.value);
        expect(gw.logText()).not.toContain(token.value);
      }
      expect(vertex.requests).toHaveLength(0);
    } finally {
      process.env.GCE_METADATA_HOST = identity.host;
    }
  });

  it('GOOGLE_APPLICATION_CREDENTIALS naming an authorized_user file: the refresh-token grant, the quota project sent along', async () => {
    const file = path.join(dir, 'adc-user.json');
    await writeFile(file, JSON.stringify({ type: 'authorized_user', client_id: USER.clientId, client_secret: USER.clientSecret, refresh_token: USER.refreshToken, quota_project_id: 'proj-billing', token_uri: identity.tokenUri }));
    process.env.GOOGLE_APPLICATION_CREDENTIALS = file;
    try {
      const metadataCalls = identity.metadataCalls.length;
      const answers = await Promise.all([ask('as a user 1'), ask('as a user 2')]);
      expect(answers.map((a) => a.choices[0].message.content)).toEqual(['You said: as a user 1', 'You said: as a user 2']);
      const grants = identity.forms.filter((form) => form.grant_type === 'refresh_token' && form.refresh_token === USER.refreshToken);
      expect(grants.at(-1)).toEqual({ grant_type: 'refresh_token', client_id: USER.clientId, client_secret: USER.clientSecret, refresh_token: USER.refreshToken });
      const token = identity.issued.at(-1)!;
      expect(token.by).toBe('refresh');
      expect(vertex.requests.map((r) => [r.headers.authorization, r.headers['x-goog-user-project']])).toEqual([
        [`Bearer ${token.value}`, 'proj-billing'],
        [`Bearer ${token.value}`, 'proj-billing'],
      ]);
      expect(identity.metadataCalls.length).toBe(metadataCalls);

      // A revoked refresh token: 502 with Google's reason, neither the refresh token nor the client secret in it.
      await writeFile(file, JSON.stringify({ type: 'authorized_user', client_id: USER.clientId, client_secret: USER.clientSecret, refresh_token: '1//revoked', token_uri: identity.tokenUri }));
      vertex.expireTokens();
      const error = (await ask('revoked').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error.status).toBe(502);
      expect(error.error).toMatchObject({ code: 'upstream_auth_failed' });
      expect((error.error as { message: string }).message).toContain(`the token endpoint ${identity.tokenUri} refused the refresh token of client ${USER.clientId} (invalid_grant: Token has been expired or revoked.)`);
      for (const secret of ['1//revoked', USER.refreshToken, USER.clientSecret, token.value]) {
        expect(JSON.stringify(error.error)).not.toContain(secret);
        expect(gw.logText()).not.toContain(secret);
      }
    } finally {
      delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    }
  });
});
