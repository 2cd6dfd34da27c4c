// The in-flight gauges read the gateway's one list of open requests (its exchanges): requests held
// open by a slow upstream show in tollgate_inflight_requests, the streamed ones also in
// tollgate_open_streams, and both fall back to 0 once every request has ended, whichever way it ended
// (answered, or the client gone).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { account, apiKey, model, newKey, plan, startTestGateway, upstream, type TestGateway } from '../helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.ts';
import { scrape } from '../helpers/metrics.ts';
import { until } from '../helpers/proxy-tools.ts';

process.env.TEST_UPSTREAM_KEY = 'sk-upstream-secret-inflight';
const key = newKey('k', 'acme');

/** The upstream holds every request until released: streams after their first chunk, JSON answers before any byte. */
function holdingUpstream() {
  const held: Array<() => void> = [];
  /** `body`: the request's JSON text, as the fake upstream recorded it. */
  const respond = async (text: string, res: ServerResponse) => {
    const body = JSON.parse(text);
    const release = new Promise<void>((resolve) => held.push(resolve));
    const base = { id: 'chatcmpl-held', created: 1, model: body.model };
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: 'held' }, finish_reason: null }] })}\n\n`);
      await release;
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    } else {
      await release;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'held' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    }
  };
  return { respond, held, releaseAll: () => held.splice(0).forEach((release) => release()) };
}

describe('in-flight gauges', () => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  const holding = holdingUpstream();

  beforeAll(async () => {
    // The fake has read and recorded the body when it calls respond: the last request recorded is this one.
    fake = await startFakeUpstream('held', { respond: (_req, res) => holding.respond(fake.requests.at(-1)!.body, res) });
    gw = await startTestGateway(
      [upstream('held', fake.url), model('gpt-4o', [{ upstream: 'held' }]), plan('pro', ['gpt-4o']), account('acme', 'pro'), apiKey(key)],
      { telemetry: { metricsPort: 0, metricsHost: '127.0.0.1', accountSeries: 0, tracing: { enabled: false, reason: 'test' } } },
    );
  });
  afterAll(async () => {
    holding.releaseAll();
    await gw?.stop();
    await fake?.close();
  });

  const gauge = async (name: string) => (await scrape(`${gw.telemetry.metricsURL}/metrics`))(name);
  const chat = (stream: boolean, signal?: AbortSignal) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', stream, messages: [{ role: 'user', content: 'hold on' }] }),
      signal,
    });

  it('count the requests held open, streams apart, and return to 0 when they end', async () => {
    expect(await gauge('tollgate_inflight_requests')).toBe(0);
    expect(await gauge('tollgate_open_streams')).toBe(0);

    // Three streams, each past its first chunk; two JSON requests waiting for their answer; one more
    // JSON request whose client gives up while it waits.
    const streams = await Promise.all([0, 1, 2].map(() => chat(true)));
    const readers = streams.map((response) => response.body!.getReader());
    for (const reader of readers) expect(new TextDecoder().decode((await reader.read()).value)).toContain('held');
    const waiting = [chat(false), chat(false)];
    const leaving = new AbortController();
    const gone = chat(false, leaving.signal).catch((error: Error) => error);
    await until(() => holding.held.length === 6, 'the upstream to hold six requests');

    expect(await gauge('tollgate_inflight_requests')).toBe(6);
    expect(await gauge('tollgate_open_streams')).toBe(3);

    leaving.abort();
    expect(await gone).toBeInstanceOf(Error);
    await until(async () => (await gauge('tollgate_inflight_requests')) === 5, 'the abandoned request to leave the gauge');
    expect(await gauge('tollgate_open_streams')).toBe(3);

    holding.releaseAll();
    for (const answer of await Promise.all(waiting)) expect((await answer.json()).choices[0].message.content).toBe('held');
    for (const reader of readers) while (!(await reader.read()).done);
    await until(async () => (await gauge('tollgate_inflight_requests')) === 0, 'the in-flight gauge to return to 0');
    expect(await gauge('tollgate_open_streams')).toBe(0);
  });
});
