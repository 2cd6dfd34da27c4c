// Small JSON bodies usually arrive whole with their headers and are taken from the request's buffer
// in one read (http/body.ts, takeBuffered) instead of being streamed: they must hold the in-flight
// body budget exactly like streamed bodies do, and give it back when the request ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, expectErrorShape, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const key = newKey('k', 'acme');
const BUDGET = 4000;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway([plan('pro', ['service-test']), account('acme', 'pro'), apiKey(key)], { bodyBudgetBytes: BUDGET });
});
afterAll(async () => {
  await gw?.stop();
});

/** A chat request of exactly `size` bytes, sent with its Content-Length in one write. */
function chatOfSize(size: number): string {
  const head = '{"model":"service-test","messages":[{"role":"user","content":"hi"}],"user":"';
  return head + 'u'.repeat(size - head.length - 2) + '"}';
}

const post = (body: string) =>
  fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body });

describe('small bodies and the in-flight body budget', () => {
  it('a body larger than the whole budget is refused with 503 and Retry-After, however it arrived', async () => {
    const response = await post(chatOfSize(BUDGET + 100));
    const answer = { status: response.status, headers: response.headers, json: await response.json() };
    expectErrorShape(answer, 503, 'server_busy');
    expect(answer.headers.get('retry-after')).toBe('1');
  });

  it('gives the budget back when each request ends: many bodies of most of the budget pass one after another', async () => {
    const body = chatOfSize(BUDGET - 500);
    for (let i = 0; i < 50; i++) {
      const answer = await post(body);
      expect(answer.status, await answer.clone().text()).toBe(200);
      await answer.text();
    }
  });
});
