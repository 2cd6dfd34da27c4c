// The operator probes a Vertex Upstream that names no credentials with Application Default
// Credentials, as it would on GKE with Workload Identity: the API server takes the Upstream (the CRD
// allows a vertex upstream without credentials, and still refuses one without vertex settings), the
// operator gets a token from the metadata server (a fake reached through GCE_METADATA_HOST) and writes
// ResolvedRefs=ApplicationDefaultCredentials and CredentialsValid=True; no token reaches its log.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, condition, manifests, startCluster, startOperatorProcess, type Cluster, type Proc } from '../helpers/cluster.ts';
import { startFakeGemini, type FakeGemini } from '../fakes/gemini.ts';
import { startFakeGoogleIdentity, type FakeGoogleIdentity } from '../fakes/google-identity.ts';

let cluster: Cluster;
let operator: Proc;
let vertex: FakeGemini;
let identity: FakeGoogleIdentity;
let dir: string;

const upstreamOf = (name: string, spec: Record<string, unknown>) => ({ apiVersion: API, kind: 'Upstream', metadata: { name }, spec });
const apply = (...objects: object[]) => cluster.kubectl(['apply', '-f', '-'], manifests(...objects));

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-operator-adc-'));
  cluster = await startCluster();
  vertex = await startFakeGemini();
  identity = await startFakeGoogleIdentity((token) => vertex.acceptToken(token.value, token.expiresAt));
  operator = await startOperatorProcess(cluster, { GOOGLE_APPLICATION_CREDENTIALS: '', CLOUDSDK_CONFIG: path.join(dir, 'gcloud'), GCE_METADATA_HOST: identity.host });
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await Promise.all([vertex?.close(), identity?.close()]);
  await cluster?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('operator: a vertex upstream on Application Default Credentials', () => {
  it('is accepted without credentials, probed with the metadata server token, and reported valid', async () => {
    await apply(upstreamOf('vertex-adc', { provider: 'vertex', baseURL: vertex.url, vertex: { project: 'proj-1', location: 'us-central1' } }));
    await cluster.kubectl(['wait', 'upstream/vertex-adc', '--for=condition=CredentialsValid', '--timeout=30s']);
    expect(await condition(cluster, 'upstream', 'vertex-adc', 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ApplicationDefaultCredentials' });
    expect((await condition(cluster, 'upstream', 'vertex-adc', 'CredentialsValid'))?.message).toMatch(/countTokens accepted the credentials$/);
    const token = identity.issued.find((t) => t.by === 'metadata');
    expect(token).toBeDefined();
    expect(vertex.requests.some((r) => r.path.endsWith(':countTokens') && r.headers.authorization === `Bearer ${token!.value}`)).toBe(true);
    for (const issued of identity.issued) expect(operator.text()).not.toContain(issued.value);
  });

  it('a vertex upstream without vertex settings is still refused, naming the field', async () => {
    await expect(apply(upstreamOf('vertex-nowhere', { provider: 'vertex' }))).rejects.toThrow(/spec\.vertex: .*a vertex upstream needs vertex\.project and vertex\.location/);
  });
});
