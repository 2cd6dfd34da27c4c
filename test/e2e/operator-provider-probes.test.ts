// The operator's probes of Gemini, Vertex AI and Bedrock Upstreams, end to end: the fake API server,
// the operator as its own process, and the fake providers (which check keys, OAuth tokens and SigV4
// as Google and AWS do). Each provider's cheap authenticated call is made with the credentials in the
// Upstream's Secrets, and the result is written as CredentialsValid True/False and status.probeTarget,
// read with kubectl as a person would. No credential reaches the operator's log.
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, condition, manifests, startCluster, startOperatorProcess, type Cluster, type Proc } from '../helpers/cluster.ts';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';

const EMAIL = 'probe@proj-1.iam.gserviceaccount.com';
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });

let cluster: Cluster;
let operator: Proc;
let gemini: FakeGemini;
let bedrock: FakeBedrock;

const meta = (name: string) => ({ name });
const secretOf = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Secret', metadata: meta(name), type: 'Opaque', stringData: data });
const upstreamOf = (name: string, spec: Record<string, unknown>) => ({ apiVersion: API, kind: 'Upstream', metadata: meta(name), spec });
const apply = (...objects: object[]) => cluster.kubectl(['apply', '-f', '-'], manifests(...objects));
const wait = (resource: string, forWhat: string) => cluster.kubectl(['wait', resource, `--for=${forWhat}`, '--timeout=30s']);
const serviceAccount = (privateKey: ReturnType<typeof generateKeyPairSync>['privateKey']) =>
  JSON.stringify({ type: 'service_account', project_id: 'proj-1', private_key_id: 'kid-1', client_email: EMAIL, token_uri: gemini.tokenUri, private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() });

beforeAll(async () => {
  cluster = await startCluster();
  gemini = await startFakeGemini({ serviceAccount: { email: EMAIL, publicKey: keys.publicKey } });
  bedrock = await startFakeBedrock();
  operator = await startOperatorProcess(cluster);
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await Promise.all([gemini?.close(), bedrock?.close()]);
  await cluster?.close();
});

async function status(name: string) {
  return JSON.parse(await cluster.kubectl(['get', 'upstream', name, '-o', 'json'])).status;
}

describe('operator: probes of gemini, vertex and bedrock upstreams', () => {
  it('gemini: the model list with x-goog-api-key; a key Google calls invalid (HTTP 400 API_KEY_INVALID) is CredentialsValid=False', async () => {
    await apply(
      secretOf('gemini-good', { apiKey: gemini.apiKey }),
      secretOf('gemini-bad', { apiKey: 'AIzaNotTheKey000000000000000' }),
      upstreamOf('gemini-good', { provider: 'gemini', baseURL: gemini.url, credentials: { secretRef: { name: 'gemini-good', key: 'apiKey' } } }),
      upstreamOf('gemini-bad', { provider: 'gemini', baseURL: gemini.url, credentials: { secretRef: { name: 'gemini-bad', key: 'apiKey' } } }),
    );
    await wait('upstream/gemini-good', 'condition=CredentialsValid');
    expect((await status('gemini-good')).probeTarget).toBe(`GET ${gemini.url}/v1beta/models?pageSize=1000`);
    expect(gemini.requests.some((r) => r.path === '/v1beta/models?pageSize=1000' && r.headers['x-goog-api-key'] === gemini.apiKey && !r.path.includes('key='))).toBe(true);
    // Gemini's own list shape (models[].name), counted as the ids a Model names.
    expect((await status('gemini-good')).models).toEqual(['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-3-pro-preview', 'gemini-embedding-001']);
    expect((await condition(cluster, 'upstream', 'gemini-good', 'CredentialsValid'))?.message).toMatch(/accepted the credentials \(4 models offered\)$/);
    await wait('upstream/gemini-bad', 'condition=CredentialsValid=False');
    const refused = await condition(cluster, 'upstream', 'gemini-bad', 'CredentialsValid');
    expect(refused).toMatchObject({ reason: 'CredentialsRefused' });
    expect(refused!.message).toMatch(/Secret gemini-bad/);
    expect((await condition(cluster, 'upstream', 'gemini-bad', 'Reachable'))?.status).toBe('True');
  });

  it('vertex: a token minted from the service account, then countTokens; a key Google does not know is CredentialsValid=False', async () => {
    await apply(
      secretOf('vertex-sa', { key: serviceAccount(keys.privateKey) }),
      secretOf('vertex-stranger', { key: serviceAccount(stranger.privateKey) }),
      upstreamOf('vertex-good', { provider: 'vertex', baseURL: gemini.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { secretRef: { name: 'vertex-sa', key: 'key' } } }),
      upstreamOf('vertex-bad', { provider: 'vertex', baseURL: gemini.url, vertex: { project: 'proj-1', location: 'us-central1' }, credentials: { secretRef: { name: 'vertex-stranger', key: 'key' } } }),
    );
    await wait('upstream/vertex-good', 'condition=CredentialsValid');
    expect((await status('vertex-good')).probeTarget).toBe(`POST ${gemini.url}/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:countTokens`);
    expect(gemini.requests.some((r) => r.path.endsWith(':countTokens') && /^Bearer ya29\.fake-/.test(String(r.headers.authorization)))).toBe(true);
    // countTokens is no model list: no count, rather than a false 0.
    expect((await condition(cluster, 'upstream', 'vertex-good', 'CredentialsValid'))?.message).toMatch(/accepted the credentials$/);
    await wait('upstream/vertex-bad', 'condition=CredentialsValid=False');
    const refused = await condition(cluster, 'upstream', 'vertex-bad', 'CredentialsValid');
    expect(refused?.reason).toBe('CredentialsUnavailable');
    expect(refused?.message).toMatch(/token endpoint .* refused the service account probe@proj-1/);
  });

  it('bedrock: ListAsyncInvokes signed with the keys in Secrets; a wrong secret key is CredentialsValid=False', async () => {
    await apply(
      secretOf('aws-keys', { id: FAKE_ACCESS_KEY, secret: FAKE_SECRET_KEY, wrong: 'not-the-secret-0000000000000000000000000' }),
      upstreamOf('aws-good', { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { secretRef: { name: 'aws-keys', key: 'id' } }, secretAccessKey: { secretRef: { name: 'aws-keys', key: 'secret' } } } }),
      upstreamOf('aws-bad', { provider: 'bedrock', baseURL: bedrock.url, bedrock: { region: 'us-east-1', accessKeyId: { secretRef: { name: 'aws-keys', key: 'id' } }, secretAccessKey: { secretRef: { name: 'aws-keys', key: 'wrong' } } } }),
    );
    await wait('upstream/aws-good', 'condition=CredentialsValid');
    expect((await status('aws-good')).probeTarget).toBe(`GET ${bedrock.url}/async-invoke?maxResults=1`);
    expect(bedrock.requests.some((r) => r.operation === 'list-async-invokes' && r.refused === null)).toBe(true);
    expect((await condition(cluster, 'upstream', 'aws-good', 'CredentialsValid'))?.message).toMatch(/accepted the credentials$/);
    expect((await status('aws-good')).models).toBeUndefined();
    await wait('upstream/aws-bad', 'condition=CredentialsValid=False');
    expect(await condition(cluster, 'upstream', 'aws-bad', 'CredentialsValid')).toMatchObject({ reason: 'CredentialsRefused' });
    expect(bedrock.requests.some((r) => r.operation === 'list-async-invokes' && r.refused === 'InvalidSignatureException')).toBe(true);
  });

  it('the API server refuses files: true on a translated provider with the CRD rule, naming spec.files', async () => {
    const refused = apply(upstreamOf('gemini-files', { provider: 'gemini', files: true, credentials: { secretRef: { name: 'gemini-good', key: 'apiKey' } } }));
    await expect(refused).rejects.toThrow(/spec\.files: Invalid value: "object": files: true needs provider openai or azure/);
    expect(await cluster.get('upstream', 'gemini-files')).toBeFalsy();
  });

  it('no key, private key, token or signature in the operator log', () => {
    const log = operator.text();
    const privateKeyLine = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString().split('\n')[1];
    for (const secret of [gemini.apiKey, FAKE_SECRET_KEY, privateKeyLine]) expect(log).not.toContain(secret);
    expect(log).not.toMatch(/ya29\.fake-|Signature=[0-9a-f]{64}/);
  });
});
