// Every way an upstream can fail, seen through the official SDK: refused, reset mid-stream, hanging
// before and after the first byte, garbage instead of events, a huge JSON answer, and one huge event.
// Each is a clean error (an OpenAI error answer, or an in-band error event the SDK raises), the
// gateway serves the next request, memory stays bounded, and the credential never reaches a log.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { peakLiveMemoryGrowth } from '../helpers/proxy-tools.ts';
import { waitFor } from '../helpers/wait.ts';
import { MB, registerLogs, registerSecret, scanLogs } from './harness.ts';

process.env.HOSTILE_UPSTREAM_KEY = registerSecret('sk-hostile-upstream-credential-5f3a9c0e71');
const key = newKey('k', 'acme');
registerSecret(key.key);
let gw: TestGateway;
let fake: FakeUpstream;
let refusedPort: number;

beforeAll(async () => {
  fake = await startFakeUpstream('faulty');
  // A port that was free a moment ago: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  refusedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  gw = await startTestGateway(
    [
      upstream('faulty', fake.url, 'HOSTILE_UPSTREAM_KEY'),
      upstream('refusing', `http://127.0.0.1:${refusedPort}/v1`, 'HOSTILE_UPSTREAM_KEY'),
      model('m', [{ upstream: 'faulty' }]),
      model('gone', [{ upstream: 'refusing' }]),
      plan('pro', ['m', 'gone', 'service-test']),
      account('acme', 'pro'),
      apiKey(key),
    ],
    { maxSseEventBytes: 2 * MB, breaker: { threshold: 1000, cooldownMs: 1000 } },
  );
  registerLogs(() => gw.logText());
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const ask = (modelName = 'm') => gw.client(key.key, { timeout: 60_000 }).chat.completions.create({ model: modelName, messages: [{ role: 'user', content: 'hi' }] });
const stream = (modelName = 'm') => gw.client(key.key, { timeout: 20_000 }).chat.completions.create({ model: modelName, messages: [{ role: 'user', content: 'hi' }], stream: true });

async function collect(s: AsyncIterable<{ choices: Array<{ delta?: { content?: string | null } }> }>): Promise<string> {
  let text = '';
  for await (const chunk of s) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

function drained(res: import('node:http').ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function servesNormally() {
  fake.behave({});
  const answer = await ask();
  expect(answer.choices[0].message.content).toContain('faulty');
}

describe('upstream faults', () => {
  it('connection refused: 502 in the error shape, with the credential nowhere in it', async () => {
    const error = await ask('gone').catch((e) => e);
    // 503: no target of the model could be reached.
    expect([502, 503]).toContain(error.status);
    expect(error.error).toMatchObject({ type: expect.any(String), message: expect.any(String) });
    expect(JSON.stringify(error.error)).not.toContain(process.env.HOSTILE_UPSTREAM_KEY);
    await servesNormally();
  });

  it('reset mid-stream: the SDK raises the in-band error event', async () => {
    fake.behave({ chunks: 10, resetAfterChunks: 3 });
    const error = await collect(await stream()).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String(error.message)).toMatch(/upstream stream failed|incomplete/);
    await servesNormally();
  });

  it('garbage instead of events: relayed as it came, the stream still ends, the gateway still serves', async () => {
    fake.behave({
      respond: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('this is not\0 an event stream\r\n\r\n\xff\xfe garbage\n\n');
        res.end('data: {not json\n\n');
      },
    });
    const outcome = await collect(await stream()).then(
      () => 'ended',
      (e: Error) => e.message,
    );
    expect(outcome).toBeTruthy();
    await servesNormally();
  });

  it('hang before the first byte: the client gives up, the upstream request is aborted, the gateway serves', async () => {
    fake.behave({ hang: true });
    const aborted = fake.aborted;
    const error = await gw.client(key.key, { timeout: 500 }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
    expect(error.constructor.name).toMatch(/Timeout|Connection/);
    await servesNormally();
    expect(fake.aborted + fake.requests.length).toBeGreaterThan(aborted);
  });

  it('hang after the first byte: the client that gives up frees the stream', async () => {
    fake.behave({ chunks: 10, stallAfterChunks: 2 });
    const aborted = fake.aborted;
    const controller = new AbortController();
    const s = await gw.client(key.key).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }, { signal: controller.signal });
    let chunks = 0;
    const reading = (async () => {
      for await (const _ of s) if (++chunks === 2) controller.abort();
    })().catch((e) => e);
    await reading;
    expect(chunks).toBeGreaterThanOrEqual(2);
    // The gateway let go of the upstream stream too.
    await waitFor(() => fake.aborted > aborted, 5000, 'the upstream stream to be aborted');
    await servesNormally();
  });

  it('a JSON answer larger than the gateway accepts: 502, memory bounded', async () => {
    const filler = Buffer.alloc(MB, 'x').toString();
    fake.behave({
      respond: async (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"id":"x","choices":[{"message":{"content":"');
        for (let i = 0; i < 66 && !res.destroyed; i++) {
          if (!res.write(filler)) await drained(res);
        }
        res.end('"}}]}');
      },
    });
    const { result: error, peakBytes } = await peakLiveMemoryGrowth(() => ask().catch((e) => e));
    expect(error.status, String(error)).toBe(502);
    expect(peakBytes).toBeLessThan(200 * MB);
    await servesNormally();
  });

  it('one huge event: the stream ends with an in-band error the SDK raises, none of it is held past the cap', async () => {
    const chunk = Buffer.alloc(256 * 1024, 'y').toString();
    fake.behave({
      respond: async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'first ' }, finish_reason: null }] })}\n\n`);
        res.write('data: {"id":"c","choices":[{"index":0,"delta":{"content":"');
        // 120 MB in one data line, written as fast as the gateway takes it.
        for (let i = 0; i < 480 && !res.destroyed; i++) {
          if (!res.write(chunk)) await drained(res);
        }
        if (!res.destroyed) res.end('"}}]}\n\n');
      },
    });
    let text = '';
    const { result: error, peakBytes } = await peakLiveMemoryGrowth(async () => {
      try {
        for await (const c of await stream()) text += c.choices[0]?.delta?.content ?? '';
        return null;
      } catch (e) {
        return e as Error;
      }
    });
    expect(text).toBe('first ');
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toMatch(/larger than the gateway accepts/);
    expect(peakBytes).toBeLessThan(64 * MB);
    const line = gw.logs.find((l) => l.streamError === 'upstream_event_too_large');
    expect(line).toBeTruthy();
    await servesNormally();
  });
});

afterAll(() => {
  expect(scanLogs()).toEqual([]);
});
