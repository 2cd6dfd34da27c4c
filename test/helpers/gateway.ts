// Starts a real gateway on port 0 with its own manifest file and data directory, and gives tests
// keys, an SDK client and raw-HTTP helpers. Every test closes what it starts.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { pino } from 'pino';
import { loadConfig, type GatewayConfig } from '../../gateway/src/config.ts';
import { generateKey, hashKey } from '../../gateway/src/resources/keys.ts';
import { startGateway, type RunningGateway, type StartOptions } from '../../gateway/src/server.ts';

export interface TestKey {
  name: string;
  account: string;
  key: string;
  revoked?: boolean;
  expiresAt?: string;
}

export interface TestGateway extends RunningGateway {
  dir: string;
  configFile: string;
  logs: Array<Record<string, unknown>>;
  /** Raw log text, for asserting that secrets never appear. */
  logText(): string;
  client(key: string, options?: Partial<ConstructorParameters<typeof OpenAI>[0]>): OpenAI;
  /** Rewrites the manifest file and waits until the gateway has applied it. */
  writeManifests(manifests: unknown[]): Promise<void>;
  stop(): Promise<void>;
}

export const API = 'tollgate.dev/v1alpha1';

export function account(name: string, plan?: string) {
  return { apiVersion: API, kind: 'Account', metadata: { name }, spec: plan ? { plan } : {} };
}
export function plan(name: string, models: string[], limits?: Record<string, number>) {
  return { apiVersion: API, kind: 'Plan', metadata: { name }, spec: { models, ...(limits ? { limits } : {}) } };
}
export function upstream(name: string, baseURL: string, env = 'TEST_UPSTREAM_KEY') {
  return { apiVersion: API, kind: 'Upstream', metadata: { name }, spec: { baseURL, credentials: { env } } };
}
export function model(name: string, targets: Array<{ upstream: string; model?: string; priority?: number; weight?: number }>) {
  return { apiVersion: API, kind: 'Model', metadata: { name }, spec: { targets } };
}
export function apiKey(k: TestKey) {
  return {
    apiVersion: API,
    kind: 'ApiKey',
    metadata: { name: k.name },
    spec: { account: k.account, keyHash: hashKey(k.key), ...(k.revoked ? { revoked: true } : {}), ...(k.expiresAt ? { expiresAt: k.expiresAt } : {}) },
  };
}
export function newKey(name: string, accountName: string, extra: Partial<TestKey> = {}): TestKey {
  return { name, account: accountName, key: generateKey('tg'), ...extra };
}

export async function startTestGateway(manifests: unknown[], overrides: Partial<GatewayConfig> = {}, options: StartOptions = {}): Promise<TestGateway> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-test-'));
  const configFile = path.join(dir, 'tollgate.yaml');
  await writeFile(configFile, toYaml(manifests));
  const logs: Array<Record<string, unknown>> = [];
  let text = '';
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      const line = chunk.toString();
      text += line;
      for (const piece of line.split('\n')) if (piece.trim()) logs.push(JSON.parse(piece));
      callback();
    },
  });
  const log = pino({ level: overrides.logLevel ?? 'info' }, sink);
  const defaults = loadConfig({});
  const config: GatewayConfig = {
    ...defaults,
    // The metrics listener on a free port of its own for each test gateway.
    telemetry: { ...defaults.telemetry, metricsPort: 0, metricsHost: '127.0.0.1' },
    port: 0,
    host: '127.0.0.1',
    configFile,
    configFileExplicit: true,
    dataDir: path.join(dir, 'data'),
    bootstrapDemoKey: false,
    reloadPollMs: 200,
    ...overrides,
  };
  const gateway = await startGateway(config, log, options);
  return Object.assign(gateway, {
    dir,
    configFile,
    logs,
    logText: () => text,
    client: (key: string, options = {}) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0, ...options }),
    async writeManifests(next: unknown[]) {
      const generation = gateway.store.generation;
      const text = toYaml(next);
      if (text === (await readFile(configFile, 'utf8'))) return;
      await writeFile(configFile, text);
      await gateway.source.reload();
      if (gateway.store.generation === generation) throw new Error('the gateway did not apply the new manifests');
    },
    async stop() {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
}

export function toYaml(manifests: unknown[]): string {
  return manifests.map((m) => `---\n${stringify(m)}`).join('');
}

/** Raw HTTP through fetch, for framing, headers and error paths the SDK would hide. A FormData body is sent as multipart. */
export async function raw(gateway: { url: string }, method: string, pathname: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | FormData | undefined;
  if (options.body instanceof FormData) body = options.body;
  else if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${gateway.url}${pathname}`, { method, headers, body });
  const text = await response.text();
  let json: any = undefined;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, text, json };
}

/** Asserts the OpenAI error shape: all four keys, JSON content type, request id headers. */
export function expectErrorShape(response: { status: number; headers: Headers; json: any }, status: number, code?: string) {
  const problems: string[] = [];
  if (response.status !== status) problems.push(`status ${response.status} != ${status}`);
  if (!response.headers.get('content-type')?.startsWith('application/json')) problems.push(`content-type ${response.headers.get('content-type')}`);
  const error = response.json?.error;
  if (!error || typeof error.message !== 'string' || typeof error.type !== 'string' || !('param' in error) || !('code' in error)) problems.push(`body ${JSON.stringify(response.json)}`);
  if (code && error?.code !== code) problems.push(`code ${error?.code} != ${code}`);
  const id = response.headers.get('x-service-request-id');
  if (!id || response.headers.get('x-request-id') !== id) problems.push('request id headers');
  if (problems.length) throw new Error(`not an OpenAI error answer: ${problems.join('; ')}`);
  return error;
}
