// Application Default Credentials source by source, against the fake metadata server, token endpoint,
// STS and IAM Credentials (test/fakes/google-identity.ts) and the fake Vertex that accepts what they
// issue: a service-account key file, an external_account (workload identity federation: a subject
// token file exchanged at STS, then impersonation), the refresh margin on an injected clock, a
// metadata server that hangs or is not one, and files that say clearly what is wrong with them.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Upstream } from '@tollgate/crds';
import { IdentityPoolClient } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderAuthError } from '../../gateway/src/providers/auth.ts';
import { ApplicationDefaultCredentials } from '../../gateway/src/providers/gemini/adc.ts';
import { vertexTokenAuth } from '../../gateway/src/providers/gemini/auth.ts';
import { vertex as vertexModule } from '../../gateway/src/providers/gemini/index.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { FEDERATION, startFakeGoogleIdentity, type FakeGoogleIdentity } from '../fakes/google-identity.ts';

const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'adc@proj-1.iam.gserviceaccount.com';
const upstream = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'v' }, spec: { provider: 'vertex', vertex: { project: 'proj-1', location: 'us-central1' } } } as Upstream;
const noRead = () => undefined;
let dir: string;
let vertex: FakeGemini;
let identity: FakeGoogleIdentity;

/** ADC over an environment of its own (never the process's), with the gcloud directory empty. */
function adc(env: Record<string, string>, options: { now?: () => number; metadataTimeoutMs?: number } = {}) {
  return new ApplicationDefaultCredentials({ env: { CLOUDSDK_CONFIG: path.join(dir, 'gcloud'), GCE_METADATA_HOST: identity.host, ...env }, ...options });
}

async function callVertex(auth: ReturnType<typeof vertexTokenAuth>) {
  const request = vertexModule.translation.chatRequest({ messages: [{ role: 'user', content: 'hi' }] }, { model: 'gemini-2.5-pro', upstream }, false);
  const url = new URL(request.path, vertex.url);
  const headers = await auth.authorize(request, { upstream, url }, noRead, new AbortController().signal);
  const response = await fetch(url, { method: 'POST', headers: { ...request.headers, ...headers }, body: request.body });
  return { status: response.status, headers };
}

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a failure'); }, (error: unknown) => error as Error);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-adc-sources-'));
  vertex = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } });
  identity = await startFakeGoogleIdentity((token) => vertex.acceptToken(token.value, token.expiresAt));
});
afterAll(async () => {
  await Promise.all([vertex?.close(), identity?.close()]);
  await rm(dir, { recursive: true, force: true });
});

describe('Application Default Credentials, source by source', () => {
  it('a service-account key file: the JWT-bearer grant at its token_uri', async () => {
    const file = path.join(dir, 'sa.json');
    const privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await writeFile(file, JSON.stringify({ type: 'service_account', project_id: 'proj-1', private_key_id: 'k1', private_key: privateKey, client_email: EMAIL, token_uri: vertex.tokenUri }));
    const before = vertex.tokenRequests;
    const auth = vertexTokenAuth(Date.now, adc({ GOOGLE_APPLICATION_CREDENTIALS: file }));
    expect((await callVertex(auth)).status).toBe(200);
    expect(vertex.tokenRequests - before).toBe(1);
    expect(identity.metadataCalls).toHaveLength(0);
  });

  it("an external_account: a subject token file exchanged at STS, then the service account impersonated; google-auth-library does the same against the fakes", async () => {
    const tokenFile = path.join(dir, 'subject-token');
    await writeFile(tokenFile, FEDERATION.subjectToken);
    const config = {
      type: 'external_account',
      audience: FEDERATION.audience,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: identity.tokenUri,
      credential_source: { file: tokenFile },
      service_account_impersonation_url: `${identity.url}/v1/projects/-/serviceAccounts/${FEDERATION.serviceAccount}:generateAccessToken`,
    };
    const library = await new IdentityPoolClient(config).getAccessToken();
    expect(identity.issued.at(-1)).toMatchObject({ by: 'impersonation', value: library.token });

    const file = path.join(dir, 'federation.json');
    await writeFile(file, JSON.stringify(config));
    const auth = vertexTokenAuth(Date.now, adc({ GOOGLE_APPLICATION_CREDENTIALS: file }));
    const answer = await callVertex(auth);
    expect(answer.status).toBe(200);
    const [sts, impersonated] = identity.issued.slice(-2);
    expect([sts.by, impersonated.by]).toEqual(['sts', 'impersonation']);
    expect(answer.headers.authorization).toBe(`Bearer ${impersonated.value}`);
    expect(identity.forms.at(-1)).toEqual({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      audience: FEDERATION.audience,
      scope: 'https://www.googleapis.com/auth/cloud-platform',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      subject_token: FEDERATION.subjectToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    });

    // A subject token STS does not take: its reason, and not the token.
    await writeFile(tokenFile, 'eyJ.some-other-token.sig');
    const refused = await failure(callVertex(vertexTokenAuth(Date.now, adc({ GOOGLE_APPLICATION_CREDENTIALS: file }))));
    expect(refused).toBeInstanceOf(ProviderAuthError);
    expect(refused.message).toContain(`the token endpoint ${identity.tokenUri} refused the subject token for ${FEDERATION.audience} (invalid_grant: The audience in ID Token does not match the expected audience.)`);
    expect(refused.message).not.toContain('some-other-token');
  });

  it('an external_account with a URL-sourced subject token in JSON (as Azure IMDS answers), sending the headers it names; no impersonation', async () => {
    const seen: Array<string | undefined> = [];
    const imds: Server = createServer((req, res) => {
      seen.push(req.headers.metadata as string | undefined);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: FEDERATION.subjectToken, expires_in: '86399', token_type: 'Bearer' }));
    });
    await new Promise<void>((resolve) => imds.listen(0, '127.0.0.1', resolve));
    try {
      const file = path.join(dir, 'federation-url.json');
      await writeFile(file, JSON.stringify({
        type: 'external_account',
        audience: FEDERATION.audience,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: identity.tokenUri,
        credential_source: { url: `http://127.0.0.1:${(imds.address() as AddressInfo).port}/metadata/identity/oauth2/token?api-version=2018-02-01`, headers: { Metadata: 'True' }, format: { type: 'json', subject_token_field_name: 'access_token' } },
      }));
      const answer = await callVertex(vertexTokenAuth(Date.now, adc({ GOOGLE_APPLICATION_CREDENTIALS: file })));
      expect(answer.status).toBe(200);
      expect(identity.issued.at(-1)!.by).toBe('sts');
      expect(answer.headers.authorization).toBe(`Bearer ${identity.issued.at(-1)!.value}`);
      expect(seen).toEqual(['True']);
    } finally {
      await new Promise<void>((resolve) => imds.close(() => resolve()));
    }
  });

  it('refreshes before expiry on the clock: an hour-long token five minutes early, a short one at half its life', async () => {
    let now = Date.now();
    const credentials = adc({}, { now: () => now });
    const signal = new AbortController().signal;
    const first = await credentials.token("Upstream 'v'", signal);
    now += 3599_000 - 6 * 60_000;
    expect((await credentials.token("Upstream 'v'", signal)).token.value).toBe(first.token.value);
    now += 2 * 60_000;
    const second = await credentials.token("Upstream 'v'", signal);
    expect(second.token.value).not.toBe(first.token.value);

    identity.lifetimeSeconds = 120;
    try {
      credentials.forget("Upstream 'v'");
      const short = await credentials.token("Upstream 'v'", signal);
      now += 59_000;
      expect((await credentials.token("Upstream 'v'", signal)).token.value).toBe(short.token.value);
      now += 2_000;
      expect((await credentials.token("Upstream 'v'", signal)).token.value).not.toBe(short.token.value);
    } finally {
      identity.lifetimeSeconds = 3599;
    }
  });

  it('a metadata server that hangs fails within its timeout; the client that leaves stops waiting at once', async () => {
    identity.hold = true;
    try {
      const error = await failure(adc({}, { metadataTimeoutMs: 200 }).token("Upstream 'v'", new AbortController().signal));
      expect(error).toBeInstanceOf(ProviderAuthError);
      expect(error.message).toContain('could not be reached (no answer in time)');
      const leaving = new AbortController();
      const waiting = failure(adc({}, { metadataTimeoutMs: 60_000 }).token("Upstream 'v'", leaving.signal));
      leaving.abort(new Error('client left'));
      expect((await waiting).message).toBe('client left');
    } finally {
      identity.hold = false;
    }
  });

  it('something else answering at the metadata address (no Metadata-Flavor) is not taken for it', async () => {
    const impostor: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'not-from-google', expires_in: 3599 }));
    });
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
    try {
      const error = await failure(adc({ GCE_METADATA_HOST: `127.0.0.1:${(impostor.address() as AddressInfo).port}` }).token("Upstream 'v'", new AbortController().signal));
      expect(error.message).toContain('without Metadata-Flavor: Google, so it is not a metadata server');
    } finally {
      await new Promise<void>((resolve) => impostor.close(() => resolve()));
    }
  });

  it('files that cannot serve say what is wrong: missing, not JSON, an unknown type, an executable source', async () => {
    const token = (env: Record<string, string>) => failure(adc(env).token("Upstream 'v'", new AbortController().signal));
    const missing = path.join(dir, 'nowhere.json');
    expect((await token({ GOOGLE_APPLICATION_CREDENTIALS: missing })).message).toBe(`Upstream 'v' has no credentials, and the file GOOGLE_APPLICATION_CREDENTIALS names (${missing}) cannot be read (ENOENT).`);
    const garbage = path.join(dir, 'garbage.json');
    await writeFile(garbage, 'not json');
    expect((await token({ GOOGLE_APPLICATION_CREDENTIALS: garbage })).message).toContain('is not JSON');
    const odd = path.join(dir, 'odd.json');
    await writeFile(odd, JSON.stringify({ type: 'gdch_service_account' }));
    expect((await token({ GOOGLE_APPLICATION_CREDENTIALS: odd })).message).toContain('credentials of type "gdch_service_account" are not supported');
    const executable = path.join(dir, 'executable.json');
    await writeFile(executable, JSON.stringify({ type: 'external_account', audience: FEDERATION.audience, subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', token_url: identity.tokenUri, credential_source: { executable: { command: '/bin/true' } } }));
    expect((await token({ GOOGLE_APPLICATION_CREDENTIALS: executable })).message).toContain("credential_source must be a file or a url (executable is not supported by the gateway)");
  });
});
