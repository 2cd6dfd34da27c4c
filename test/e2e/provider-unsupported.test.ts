// What a translated provider cannot do, refused clearly: `files: true` on an anthropic, gemini,
// vertex or bedrock Upstream is refused by the schema's rule (the same CEL the CRDs carry), in the
// file source and in `tollgate validate`; and images, audio, files and batches asked of a model served
// by the fake Anthropic get a 400 naming what is not supported, with nothing sent to Anthropic.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { account, apiKey, expectErrorShape, model, newKey, plan, raw, startTestGateway, toYaml, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const CLI = fileURLToPath(new URL('../../gateway/src/cli/main.ts', import.meta.url));
const key = newKey('k', 'acme');

const translatedUpstream = (name: string, provider: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: API,
  kind: 'Upstream',
  metadata: { name },
  spec: { provider, credentials: { env: 'UNSUPPORTED_TEST_KEY' }, ...extra },
});

function tollgate(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('files: true on a translated provider is refused by the schema', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-unsupported-'));
  });
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  const refused = [
    translatedUpstream('claude-files', 'anthropic', { files: true }),
    translatedUpstream('gemini-files', 'gemini', { files: true }),
    translatedUpstream('vertex-files', 'vertex', { files: true, vertex: { project: 'p', location: 'us-central1' } }),
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws-files' }, spec: { provider: 'bedrock', files: true, bedrock: { region: 'us-east-1' } } },
  ];
  const accepted = [
    translatedUpstream('claude-no-files', 'anthropic', { files: false }),
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'openai-files' }, spec: { baseURL: 'https://api.openai.com/v1', files: true } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'openai-explicit-files' }, spec: { provider: 'openai', baseURL: 'https://api.openai.com/v1', files: true } },
    { apiVersion: API, kind: 'Upstream', metadata: { name: 'azure-files' }, spec: { provider: 'azure', baseURL: 'https://acme.openai.azure.com', azure: { apiVersion: '2024-10-21' }, files: true } },
  ];

  it('tollgate validate names each upstream and spec.files, and passes openai, azure and files: false', async () => {
    const file = path.join(scratch, 'files.yaml');
    await writeFile(file, toYaml([...refused, ...accepted]));
    const run = await tollgate(['validate', file]);
    expect(run.code).toBe(1);
    for (const name of ['claude-files', 'gemini-files', 'vertex-files', 'aws-files']) {
      expect(run.stderr).toMatch(new RegExp(`Upstream ${name}: spec\\.files.*files: true needs provider openai or azure`));
    }
    expect(run.stderr).toMatch(/invalid, 4 problems/);
    for (const name of ['claude-no-files', 'openai-files', 'openai-explicit-files', 'azure-files']) expect(run.stderr).not.toContain(`Upstream ${name}:`);
  });

  it('the file source refuses to start on it, with the reason', async () => {
    const start = startTestGateway([refused[0], model('claude', [{ upstream: 'claude-files', model: 'claude-haiku-4-5' }])]);
    await expect(start).rejects.toThrow(/Upstream claude-files: spec\.files.*files: true needs provider openai or azure/);
  });
});

describe('images, audio, files and batches for a model served by Anthropic', () => {
  let fake: FakeAnthropic;
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    process.env.UNSUPPORTED_TEST_KEY = fake.apiKey;
    gw = await startTestGateway([
      translatedUpstream('anthropic', 'anthropic', { baseURL: fake.url }),
      model('claude', [{ upstream: 'anthropic', model: 'claude-haiku-4-5' }]),
      plan('pro', ['claude']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(() => null, (e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    return error as InstanceType<typeof OpenAI.BadRequestError>;
  };

  it('image generation: 400 naming the model, the provider and the endpoint', async () => {
    const error = await refusal(client.images.generate({ model: 'claude', prompt: 'a cat' }));
    expect(error.error).toMatchObject({ code: 'unsupported_for_model', param: 'model' });
    expect(error.message).toMatch(/'claude' is served by anthropic, which Tollgate does not offer images\/generations for/);
    expect(fake.requests).toHaveLength(0);
  });

  it('speech and transcription (JSON and multipart): 400 naming the endpoint', async () => {
    const speech = await refusal(client.audio.speech.create({ model: 'claude', voice: 'alloy', input: 'hello' }));
    expect(speech.error).toMatchObject({ code: 'unsupported_for_model', param: 'model' });
    expect(speech.message).toMatch(/anthropic, which Tollgate does not offer audio\/speech/);
    const transcription = await refusal(client.audio.transcriptions.create({ model: 'claude', file: await toFile(Buffer.from('RIFF0000WAVE'), 'a.wav') }));
    expect(transcription.error).toMatchObject({ code: 'unsupported_for_model', param: 'model' });
    expect(transcription.message).toMatch(/anthropic, which Tollgate does not offer audio\/transcriptions/);
    expect(fake.requests).toHaveLength(0);
  });

  it('embeddings: Anthropic has none, a 400 naming it', async () => {
    const error = await refusal(client.embeddings.create({ model: 'claude', input: 'hello' }));
    expect(error.message).toMatch(/anthropic, which Tollgate does not offer embeddings for/);
    expect(fake.requests).toHaveLength(0);
  });

  it('batches: 400 saying the plan is served by translated providers, which have no batches API', async () => {
    const response = await raw(gw, 'POST', '/v1/batches', { key: key.key, body: { input_file_id: 'file-x', endpoint: '/v1/chat/completions', completion_window: '24h' } });
    const error = expectErrorShape(response, 400, 'unsupported_for_model');
    expect(error.message).toMatch(/models of your plan 'pro' \(claude\) are served by translated providers .* which have no batches API/);
    expect(error.message).not.toMatch(/whose upstream may support it/);
    const listing = await raw(gw, 'GET', '/v1/batches', { key: key.key });
    expect(expectErrorShape(listing, 400, 'unsupported_for_model').message).toMatch(/no batches API/);
    expect(fake.requests).toHaveLength(0);
  });

  it('files: kept by the gateway itself (the Anthropic upstream is never a files upstream), nothing sent to Anthropic', async () => {
    const uploaded = await client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), 'data.jsonl'), purpose: 'batch' });
    expect(uploaded.id).toMatch(/^file-/);
    expect((await client.files.retrieve(uploaded.id)).filename).toBe('data.jsonl');
    expect(fake.requests).toHaveLength(0);
  });
});
