import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { until } from '../helpers/proxy-tools.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret-backpressure-0123456789';
const key = newKey('k', 'acme');
const MB = 1024 * 1024;
/**
 * Bytes an upstream may get ahead of a client that reads nothing: kernel socket buffers of two hops
 * and a few stream buffers. Linux grows the receive buffer of a socket that is being read (the
 * gateway's, from the upstream) up to tcp_rmem's maximum, 32 MB on some machines, so the bound is
 * read from the kernel rather than assumed: a fixed 24 MB failed there about one run in five.
 */
const IN_FLIGHT_BOUND = socketBufferMax('tcp_rmem') + 2 * socketBufferMax('tcp_wmem') + 8 * MB;
/** What the upstream offers: well past the bound, so a gateway that buffered everything would fail. */
const OFFERED = Math.max(64 * MB, 2 * IN_FLIGHT_BOUND);

function socketBufferMax(name: 'tcp_rmem' | 'tcp_wmem'): number {
  try {
    const max = Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
    if (Number.isFinite(max) && max > 0) return max;
  } catch {}
  return 6 * MB;
}

/** Sends a JSON request and hands back the response without reading a byte of its body. */
function openUnread(gw: TestGateway, pathname: string, body: unknown): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${gw.url}${pathname}`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Waits until the fake upstream has been blocked on a full socket, with its byte count unchanged,
 * for half a second (the gateway stopped pulling), or until it sent everything (it did not).
 */
async function untilStalledOrDone(fake: FakeUpstream, total: number): Promise<void> {
  let last = -1;
  let unchangedSince = Date.now();
  await until(
    () => {
      if (fake.sent >= total) return true;
      if (!fake.blocked || fake.sent !== last) {
        last = fake.sent;
        unchangedSince = Date.now();
        return false;
      }
      return Date.now() - unchangedSince >= 500;
    },
    'the upstream to stall on backpressure or finish sending',
    30_000,
  );
}

/** Reads the rest of a body chunk by chunk, counting bytes and event separators, keeping only the tail. */
async function drain(res: IncomingMessage): Promise<{ bytes: number; events: number; tail: string }> {
  let bytes = 0;
  let events = 0;
  let tail = '';
  res.resume();
  for await (const chunk of res as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    const text = tail.slice(-1) + chunk.toString('latin1');
    events += text.split('\n\n').length - 1;
    tail = (tail + chunk.toString('latin1')).slice(-200);
  }
  return { bytes, events, tail };
}

describe('slow-reading clients: backpressure reaches the upstream', () => {
  let fake: FakeUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    fake = await startFakeUpstream('a');
    gw = await startTestGateway([upstream('a', fake.url), model('gpt-4o', [{ upstream: 'a', model: 'fake-model' }]), model('tts-1', [{ upstream: 'a' }]), plan('pro', ['gpt-4o', 'tts-1']), account('acme', 'pro'), apiKey(key)]);
  });
  afterAll(async () => {
    await gw.stop();
    await fake.close();
  });
  afterEach(() => fake.behave({}));

  it('an SSE chat stream: the gateway stops reading the upstream while the client does not read', async () => {
    const chunks = Math.ceil(OFFERED / 4096);
    fake.behave({ chunks, chunkPadding: 4096 });
    const res = await openUnread(gw, '/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const total = chunks * 4096;
    await untilStalledOrDone(fake, total);
    // What is in flight is socket buffers on both hops and a few stream buffers: bounded by the
    // kernel's buffer sizes, whatever the upstream offers.
    expect(fake.sent).toBeLessThan(IN_FLIGHT_BOUND);
    const read = await drain(res);
    // role chunk + content chunks + finish chunk + [DONE]; the usage chunk the gateway asked for is hidden.
    expect(read.events).toBe(chunks + 3);
    expect(read.tail.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(fake.sent).toBeGreaterThan(total);
  });

  it('binary speech: the gateway stops reading the upstream while the client does not read', async () => {
    const total = OFFERED;
    fake.behave({ binaryBytes: total });
    const res = await openUnread(gw, '/v1/audio/speech', { model: 'tts-1', input: 'a long story', voice: 'alloy' });
    expect(res.headers['content-type']).toBe('audio/mpeg');
    expect(Number(res.headers['content-length'])).toBe(total);
    await untilStalledOrDone(fake, total);
    expect(fake.sent).toBeLessThan(IN_FLIGHT_BOUND);
    const read = await drain(res);
    expect(read.bytes).toBe(total);
  });

  it('a client that goes away while paused releases the upstream request', async () => {
    fake.behave({ binaryBytes: OFFERED });
    const aborted = fake.aborted;
    const res = await openUnread(gw, '/v1/audio/speech', { model: 'tts-1', input: 'a long story', voice: 'alloy' });
    await untilStalledOrDone(fake, OFFERED);
    res.destroy();
    await until(() => fake.aborted > aborted, 'the upstream request to be aborted');
  });
});
