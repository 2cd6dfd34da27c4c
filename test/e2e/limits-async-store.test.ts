// Plan limits over a store that answers asynchronously (as a shared one does): a request that ends
// while its limits are still being checked must leave nothing held, neither a concurrency slot nor a
// token reservation. The store here delays every call, and holds them while the client goes away.
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DelayedLimitStore } from '../fakes/delayed-limit-store.ts';
import { account, apiKey, newKey, plan, raw, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';

const key = newKey('solo-key', 'solo');
const chat = { model: 'service-test', messages: [{ role: 'user', content: 'Say something short.' }] };

/** Sends a chat request and leaves it unanswered; destroy() is the client going away. */
function openRequest(gw: TestGateway): http.ClientRequest {
  const body = JSON.stringify(chat);
  const request = http.request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  request.on('error', () => {});
  request.end(body);
  return request;
}

describe('limits with an asynchronous store', () => {
  let gw: TestGateway;
  afterEach(() => gw?.stop());

  for (const [what, limits] of [
    ['a concurrency slot', { concurrentRequests: 1 }],
    ['a slot and a token reservation', { concurrentRequests: 1, tokensPerMonth: 1_000_000 }],
  ] as const) {
    const call = 'admit';
    it(`a client that leaves while its admission (${what}) is pending leaks nothing`, async () => {
      const store = new DelayedLimitStore();
      gw = await startTestGateway([plan('one-at-a-time', ['service-test'], limits), account('solo', 'one-at-a-time'), apiKey(key)], {}, { limitStore: store });
      // Everything works through the delayed store.
      const first = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: chat });
      expect(first.status).toBe(200);
      await waitFor(() => gw.exchanges.open === 0 && store.inFlight === 0, 10_000, 'the first request to settle');

      store.hold(call);
      const request = openRequest(gw);
      await waitFor(() => store.waiting.includes(call), 10_000, `the store's ${call} call`);
      request.destroy();
      // The exchange has ended (its end hooks ran) while the store still holds the call.
      await waitFor(() => gw.exchanges.open === 0, 10_000, 'the request to end');
      store.letGo();
      await waitFor(() => store.inFlight === 0, 10_000, 'the store to settle');

      // The one slot is free again, and nothing of the budget is left reserved.
      const next = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: chat });
      expect(next.status).toBe(200);
      await waitFor(() => gw.exchanges.open === 0 && store.inFlight === 0, 10_000, 'the second request to settle');
      if ('tokensPerMonth' in limits) {
        // The month holds the two answered requests' usage and no reservation of the one that left.
        const month = new Date().toISOString().slice(0, 7);
        expect(store.inner.budgetUsed('account:solo', month)).toBe(first.json.usage.total_tokens + next.json.usage.total_tokens);
      }
    });
  }

  it('asks the store once to admit a request with all its limits and tokens, and once to settle it', async () => {
    const store = new DelayedLimitStore();
    const limits = { requestsPerMinute: 100, tokensPerMinute: 100_000, concurrentRequests: 4, tokensPerMonth: 1_000_000 };
    gw = await startTestGateway([plan('everything', ['service-test'], limits), account('solo', 'everything'), apiKey(key)], {}, { limitStore: store });
    const answer = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: chat });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    await waitFor(() => gw.exchanges.open === 0 && store.inFlight === 0, 10_000, 'the request to settle');
    expect(store.calls).toEqual(['admit', 'settle']);
    const month = new Date().toISOString().slice(0, 7);
    expect(store.inner.budgetUsed('account:solo', month)).toBe(answer.json.usage.total_tokens);

    // The router also takes the path with a trailing slash: admitted once there too, with its tokens.
    store.calls.length = 0;
    const slash = await raw(gw, 'POST', '/v1/chat/completions/', { key: key.key, body: chat });
    expect(slash.status).toBe(200);
    // Its headers report the reservation (the default answer allowance), not a look at the window.
    expect(Number(slash.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThan(99_000);
    await waitFor(() => gw.exchanges.open === 0 && store.inFlight === 0, 10_000, 'the second request to settle');
    expect(store.calls).toEqual(['admit', 'settle']);

    // A request refused before its admission (no model) takes nothing and is still counted.
    store.calls.length = 0;
    const bad = await raw(gw, 'POST', '/v1/chat/completions', { key: key.key, body: { messages: chat.messages } });
    expect(bad.status).toBe(400);
    await waitFor(() => gw.exchanges.open === 0 && store.inFlight === 0, 10_000, 'the refused request to settle');
    expect(store.calls).toEqual(['settle']);
    const next = await raw(gw, 'GET', '/v1/models', { key: key.key });
    expect(next.headers.get('x-ratelimit-remaining-requests')).toBe('96');
  });
});
