// Bedrock with the standard AWS credential chain (here its first link, the environment variables):
// temporary credentials the chain cached are refused by Bedrock once they expire (403
// ExpiredTokenException), and the gateway then fetches them afresh and tries once more, so the client
// never sees the expiry. A refusal no fresh credential mends (a missing IAM permission) is not retried.
import { BedrockRuntimeClient, ConverseCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const AWS_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_CREDENTIAL_EXPIRATION'] as const;
const key = newKey('k', 'acme');
const saved = Object.fromEntries(AWS_VARIABLES.map((name) => [name, process.env[name]]));

/** What a role's temporary credentials look like when the environment is handed them (a CI job, a sidecar). */
function handOut(sessionToken: string): void {
  process.env.AWS_ACCESS_KEY_ID = FAKE_ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = FAKE_SECRET_KEY;
  process.env.AWS_SESSION_TOKEN = sessionToken;
}

describe('provider: bedrock, chain credentials refreshed after Bedrock says they expired', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  let client: OpenAI;
  let serial = 0;

  /** The session now valid at the fake, in the environment; every earlier one expired. */
  function rotate(): string {
    if (fake.sessionToken) fake.expiredSessionTokens.add(fake.sessionToken);
    const token = `FwoGZXIvYXdzEXAMPLEsession${++serial}Token0123456789`;
    fake.sessionToken = token;
    handOut(token);
    return token;
  }

  beforeAll(async () => {
    for (const name of AWS_VARIABLES) delete process.env[name];
    fake = await startFakeBedrock();
    rotate();
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: fake.url, bedrock: { region: 'us-east-1' } } },
      model('claude', [{ upstream: 'aws', model: CLAUDE }]),
      plan('pro', ['claude']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
    client = gw.client(key.key);
  });
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
    for (const name of AWS_VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('the fake refuses an expired session token as AWS does: the AWS SDK raises ExpiredTokenException', async () => {
    const expired = `FwoGZXIvYXdzEXAMPLEexpired${serial}`;
    fake.expiredSessionTokens.add(expired);
    const aws = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: fake.url, credentials: { accessKeyId: FAKE_ACCESS_KEY, secretAccessKey: FAKE_SECRET_KEY, sessionToken: expired }, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
    const error = await aws.send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })).catch((e) => e);
    expect(error.name).toBe('ExpiredTokenException');
    expect(error.$metadata.httpStatusCode).toBe(403);
    expect(error.message).toBe('The security token included in the request is expired');
  });

  it('JSON and stream: the cached session is refused once, fetched afresh, and the client gets its answer', async () => {
    const first = rotate();
    expect((await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'first session' }] })).choices[0].message.content).toBe('You said: first session');
    expect(fake.requests.map((r) => [r.headers['x-amz-security-token'], r.refused])).toEqual([[first, null]]);

    // The role's session runs out: the chain still holds the first one; the environment has the next.
    const second = rotate();
    const answer = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'after expiry' }] });
    expect(answer.choices[0].message.content).toBe('You said: after expiry');
    expect(fake.requests.map((r) => [r.headers['x-amz-security-token'], r.refused])).toEqual([[first, null], [first, 'ExpiredTokenException'], [second, null]]);

    fake.requests.length = 0;
    const third = rotate();
    const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'streamed after expiry' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('You said: streamed after expiry');
    expect(fake.requests.map((r) => [r.headers['x-amz-security-token'], r.refused])).toEqual([[second, 'ExpiredTokenException'], [third, null]]);
  });

  it('fetched afresh only once: a chain that still hands out the expired session is a 502 after two tries, no secret in it', async () => {
    const current = rotate();
    await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'warm' }] });
    fake.expiredSessionTokens.add(current);
    fake.requests.length = 0;
    const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'still expired' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(502);
    expect(error.error).toMatchObject({ code: 'upstream_auth_failed' });
    expect(fake.requests.map((r) => r.refused)).toEqual(['ExpiredTokenException', 'ExpiredTokenException']);
    for (const secret of [current, FAKE_SECRET_KEY]) {
      expect(JSON.stringify(error.error)).not.toContain(secret);
      expect(gw.logText()).not.toContain(secret);
    }
    expect(gw.logText()).not.toMatch(/Signature=[0-9a-f]{64}/);
  });

  it('a missing IAM permission (403 AccessDeniedException) is not retried: one request, 502', async () => {
    rotate();
    await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'warm' }] });
    fake.requests.length = 0;
    fake.next({ error: { status: 403, type: 'AccessDeniedException', message: 'User: arn:aws:sts::123456789012:assumed-role/gw is not authorized to perform: bedrock:InvokeModel' } });
    const error = await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'denied' }] }).catch((e) => e);
    expect(error.status).toBe(502);
    expect(error.error).toMatchObject({ code: 'upstream_auth_failed' });
    expect(fake.requests).toHaveLength(1);
  });
});
