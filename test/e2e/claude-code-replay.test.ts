// A recorded Claude Code session's requests (headers and bodies as Claude Code 2.1 sends them: betas,
// system blocks with cache_control, tools with JSON Schema draft-07, metadata, `?beta=true`) replayed
// through the gateway. Pointed at a gateway, Claude Code sends the model names it is configured with
// (ANTHROPIC_MODEL, ANTHROPIC_SMALL_FAST_MODEL): here service-test, as a newcomer would try it.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts';
import { parseAnthropicStream } from '../helpers/anthropic-stream.ts';

const session = JSON.parse(readFileSync(new URL('../fixtures/claude-code/session.json', import.meta.url), 'utf8'));
const key = newKey('cc', 'dev');

function replay(gw: TestGateway, name: string, model: string, auth: Record<string, string>) {
  const request = session.requests.find((r: { name: string }) => r.name === name);
  return fetch(`${gw.url}${request.path}`, { method: request.method, headers: { ...request.headers, ...auth }, body: JSON.stringify({ ...request.body, model }) });
}

describe('a Claude Code session replayed through the gateway', () => {
  let gw: TestGateway;
  let anthropic: FakeAnthropic;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic();
    process.env.TEST_CC_ANTHROPIC_KEY = anthropic.apiKey;
    gw = await startTestGateway([
      { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Upstream', metadata: { name: 'anthropic' }, spec: { provider: 'anthropic', baseURL: anthropic.url.replace(/\/v1\/?$/, ''), credentials: { env: 'TEST_CC_ANTHROPIC_KEY' } } },
      model('claude-sonnet-4-6', [{ upstream: 'anthropic' }]),
      model('claude-haiku-4-5', [{ upstream: 'anthropic' }]),
      plan('claude', ['claude-*']),
      account('dev', 'claude'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await anthropic?.close();
  });

  it("relayed to Anthropic as Claude Code sent it: Claude Code's headers, betas and bodies pass Anthropic's validation, streams come back whole", async () => {
    const title = parseAnthropicStream(await (await replay(gw, 'title', 'claude-haiku-4-5', { 'x-api-key': key.key })).text());
    expect(title.stopReason).toBe('end_turn');
    const sent = anthropic.requests.at(-1)!;
    expect(sent.path).toBe('/v1/messages?beta=true');
    expect(sent.headers['anthropic-beta']).toBe(session.requests[0].headers['anthropic-beta']);
    expect(sent.headers['x-api-key']).toBe(anthropic.apiKey);
    const first = parseAnthropicStream(await (await replay(gw, 'turn1', 'claude-sonnet-4-6', { authorization: `Bearer ${key.key}` })).text());
    expect(first.stopReason).toBe('tool_use');
    expect(first.blocks.find((b) => b.type === 'tool_use').name).toBe('Read');
    const counted = await (await replay(gw, 'count', 'claude-sonnet-4-6', { authorization: `Bearer ${key.key}` })).json();
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('the title request on the small fast model streams a well-formed message (key as x-api-key)', async () => {
    const response = await replay(gw, 'title', 'service-test', { 'x-api-key': key.key });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const stream = parseAnthropicStream(await response.text());
    expect(stream.stopReason).toBe('end_turn');
    expect(stream.blocks.map((b) => b.type)).toEqual(['text']);
    expect(stream.usage.output_tokens).toBeGreaterThan(0);
  });

  it('counts tokens with the token-counting beta (key as Bearer, as ANTHROPIC_AUTH_TOKEN sends it)', async () => {
    const response = await replay(gw, 'count', 'service-test', { authorization: `Bearer ${key.key}` });
    expect(response.status).toBe(200);
    expect((await response.json()).input_tokens).toBeGreaterThan(0);
  });

  it('a first turn with tools calls the tool asked for, with input matching its schema; the continuation with its result ends the turn', async () => {
    const first = parseAnthropicStream(await (await replay(gw, 'turn1', 'service-test', { authorization: `Bearer ${key.key}` })).text());
    expect(first.stopReason).toBe('tool_use');
    const call = first.blocks.find((b) => b.type === 'tool_use');
    expect(call.name).toBe('Read');
    expect(typeof call.input.file_path).toBe('string');
    expect(call.id).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = parseAnthropicStream(await (await replay(gw, 'turn2', 'service-test', { authorization: `Bearer ${key.key}` })).text());
    expect(second.stopReason).toBe('end_turn');
    expect(second.blocks.map((b) => b.text).join('')).toContain('toBe(4)');
  });
});
