// SIGTERM with open streams, against a real gateway process (the pinned node, `gateway/src/main.ts`)
// and real streams through the official SDK: /readyz fails at once, new connections are refused
// after the accept delay, keep-alive answers (those begun before the signal too) say
// `Connection: close`, streams that can finish within the grace period finish, streams still open at
// its end get an in-band error the SDK raises, the process exits 0; a second SIGTERM exits at once.
// Its log lines join the secret scan.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, toYaml, upstream } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { waitFor } from '../helpers/wait.ts';
import { firstResponse, rawExchange, registerLogs, registerSecret, rssOf, scanLogs } from './harness.ts';

const MAIN = fileURLToPath(new URL('../../gateway/src/main.ts', import.meta.url));
const CREDENTIAL = registerSecret('sk-hostile-shutdown-credential-77c0a1f4e2');
const key = newKey('k', 'acme');
registerSecret(key.key);
const GRACE_MS = 4000;
const ACCEPT_MS = 1500;

let fake: FakeUpstream;
let dir: string;
const children: ChildProcess[] = [];

interface Spawned {
  child: ChildProcess;
  url: string;
  port: number;
  exit: Promise<{ code: number | null; at: number }>;
  stdout(): string;
}

async function spawnGateway(): Promise<Spawned> {
  const configFile = path.join(dir, `tollgate-${children.length}.yaml`);
  await writeFile(
    configFile,
    toYaml([
      upstream('slow', fake.url, 'SHUTDOWN_UPSTREAM_KEY'),
      model('m', [{ upstream: 'slow' }]),
      plan('pro', ['m', 'service-test']),
      account('acme', 'pro'),
      apiKey(key),
    ]),
  );
  const env = {
    PATH: process.env.PATH,
    PORT: '0',
    HOST: '127.0.0.1',
    TOLLGATE_CONFIG: configFile,
    TOLLGATE_DATA_DIR: path.join(dir, `data-${children.length}`),
    TOLLGATE_BOOTSTRAP_KEY: 'false',
    // Several gateways may run on this machine at once: no fixed metrics port.
    TOLLGATE_METRICS_PORT: 'off',
    TOLLGATE_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    TOLLGATE_SHUTDOWN_ACCEPT_MS: String(ACCEPT_MS),
    SHUTDOWN_UPSTREAM_KEY: CREDENTIAL,
  };
  const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  registerLogs(() => out);
  const exit = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: performance.now() })));
  await waitFor(() => /"url":"http:\/\/127\.0\.0\.1:\d+"/.test(out), 20_000, 'the gateway to listen');
  const url = /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/.exec(out)!;
  return { child, url: url[1], port: Number(url[2]), exit, stdout: () => out };
}

const client = (gw: Spawned) => new OpenAI({ apiKey: key.key, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 30_000 });

/** Opens a stream and reads it to its end in the background; resolves once its first chunk arrived. */
async function openStream(gw: Spawned) {
  let text = '';
  let finish: string | null = null;
  const stream = await client(gw).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  text += first.value?.choices[0]?.delta?.content ?? '';
  const done = (async () => {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return { text, finish, error: null as Error | null, at: performance.now() };
      text += next.value.choices[0]?.delta?.content ?? '';
      finish = next.value.choices[0]?.finish_reason ?? finish;
    }
  })().catch((error: Error) => ({ text, finish, error, at: performance.now() }));
  return { done };
}

/** A JSON chat completion over a keep-alive connection: its status and its Connection header. */
function jsonAnswer(gw: Spawned): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', agent: new Agent({ keepAlive: true }), headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tollgate-shutdown-'));
  fake = await startFakeUpstream('slow');
});
afterEach(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await fake?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SIGTERM', () => {
  it('drains: readiness fails at once, new connections refused after the accept delay, short streams finish, long ones end with an error event, exit 0', async () => {
    const gw = await spawnGateway();
    const rss = rssOf(gw.child.pid!);
    // Short streams: 1 s of chunks, well inside the grace period. Long ones: 50 s, far past it.
    fake.behave({ chunks: 20, chunkIntervalMs: 50 });
    const short = await Promise.all(Array.from({ length: 10 }, () => openStream(gw)));
    fake.behave({ chunks: 1000, chunkIntervalMs: 50 });
    const long = await Promise.all(Array.from({ length: 10 }, () => openStream(gw)));
    // A JSON answer still on its way when the signal comes: answered, and its connection closed after it.
    fake.behave({ delayMs: 2000 });
    const pending = jsonAnswer(gw);
    await waitFor(() => fake.requests.length === 21, 5000, 'the upstream to hold the JSON request');
    // A keep-alive connection that has made one request, open before the signal.
    const before = await rawExchange(gw.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], { quietMs: 100 });
    expect(before.text).toMatch(/keep-alive/i);

    const signalled = performance.now();
    gw.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${gw.url}/readyz`)).status === 503, 2000, '/readyz to fail');
    const readyAt = performance.now() - signalled;
    const during = await rawExchange(gw.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'], { quietMs: 200 });
    expect(firstResponse(during.text).status).toBe(200);
    expect(during.text).toMatch(/Connection: close/i);
    await waitFor(() => refused(gw.port), 5000, 'new connections to be refused');
    const refusedAt = performance.now() - signalled;

    const answered = await pending;
    expect(answered.status).toBe(200);
    expect(answered.connection).toBe('close');

    const shortResults = await Promise.all(short.map((s) => s.done));
    for (const result of shortResults) {
      expect(result.error).toBeNull();
      expect(result.finish).toBe('stop');
    }
    const longResults = await Promise.all(long.map((s) => s.done));
    for (const result of longResults) {
      expect(result.error).toBeInstanceOf(OpenAI.APIError);
      expect(result.error!.message).toMatch(/shutting down/);
      expect((result.error as InstanceType<typeof OpenAI.APIError>).code).toBe('server_shutting_down');
      expect(result.text.length).toBeGreaterThan(0);
    }
    const exit = await gw.exit;
    expect(exit.code).toBe(0);
    const exitAt = exit.at - signalled;
    expect(readyAt).toBeLessThan(ACCEPT_MS);
    expect(refusedAt).toBeGreaterThanOrEqual(ACCEPT_MS - 50);
    // Open streams are ended 1 s before the grace period is over; the process is gone by its end.
    expect(exitAt).toBeGreaterThanOrEqual(GRACE_MS - 1100);
    expect(exitAt).toBeLessThan(GRACE_MS + 1500);
    expect(gw.stdout()).toMatch(/"abortedAtDeadline":10/);
    console.log(`shutdown figures: readyz 503 after ${readyAt.toFixed(0)} ms, refused after ${refusedAt.toFixed(0)} ms, exit after ${exitAt.toFixed(0)} ms, RSS at start ${(rss / 2 ** 20).toFixed(0)} MB`);
  });

  it('with nothing in flight, exits as soon as the accept delay has passed', async () => {
    const gw = await spawnGateway();
    const signalled = performance.now();
    gw.child.kill('SIGTERM');
    const exit = await gw.exit;
    expect(exit.code).toBe(0);
    expect(exit.at - signalled).toBeLessThan(ACCEPT_MS + 2000);
  });

  it('a second SIGTERM exits at once', async () => {
    const gw = await spawnGateway();
    fake.behave({ chunks: 1000, chunkIntervalMs: 50 });
    const long = await openStream(gw);
    gw.child.kill('SIGTERM');
    await waitFor(async () => (await fetch(`${gw.url}/readyz`)).status === 503, 2000, '/readyz to fail');
    const second = performance.now();
    gw.child.kill('SIGTERM');
    const exit = await gw.exit;
    expect(exit.at - second).toBeLessThan(1000);
    expect(exit.code).not.toBe(0);
    expect((await long.done).error).toBeInstanceOf(Error);
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
