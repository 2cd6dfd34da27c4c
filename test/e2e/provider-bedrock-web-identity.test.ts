// Bedrock with web identity, as on EKS (IRSA): no keys anywhere, only a projected token file and a
// role; the AWS chain exchanges the token at STS (AssumeRoleWithWebIdentity) for session credentials.
// When Bedrock refuses the cached session as expired, the gateway has the chain fetch afresh — a new
// STS exchange — and sends the request once more. STS here is a small fake answering in STS's own
// query-protocol XML, reached through AWS_ENDPOINT_URL_STS as the SDK documents.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_ACCESS_KEY, FAKE_SECRET_KEY, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.ts';
import { account, apiKey, model, newKey, plan, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const API = 'tollgate.dev/v1alpha1';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const ROLE = 'arn:aws:iam::123456789012:role/tollgate-gateway';
const WEB_IDENTITY_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.projected-service-account-token.sig';
const AWS_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_ROLE_ARN', 'AWS_ROLE_SESSION_NAME', 'AWS_REGION', 'AWS_ENDPOINT_URL_STS', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE', 'AWS_EC2_METADATA_DISABLED'] as const;
const saved = Object.fromEntries(AWS_VARIABLES.map((name) => [name, process.env[name]]));
const key = newKey('k', 'acme');

interface FakeSts {
  url: string;
  /** The session token of each exchange, in order. */
  issued: string[];
  /** What each AssumeRoleWithWebIdentity call carried. */
  calls: Array<Record<string, string>>;
  close(): Promise<void>;
}

/** AssumeRoleWithWebIdentity as STS answers it (query protocol: a form body in, XML out). */
async function startFakeSts(onIssue: (token: string) => void): Promise<FakeSts> {
  const sts = { url: '', issued: [] as string[], calls: [] as Array<Record<string, string>> } as FakeSts;
  const server: Server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const form = Object.fromEntries(new URLSearchParams(text));
    sts.calls.push(form);
    const fail = (code: string, message: string) => {
      res.writeHead(400, { 'content-type': 'text/xml' });
      res.end(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`);
    };
    if (req.method !== 'POST' || form.Action !== 'AssumeRoleWithWebIdentity') return fail('InvalidAction', 'Could not find operation');
    if (form.RoleArn !== ROLE) return fail('AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    if (form.WebIdentityToken !== WEB_IDENTITY_TOKEN) return fail('InvalidIdentityToken', 'Couldn\'t retrieve verification key from your identity provider');
    const token = `FwoGZXIvYXdzEXAMPLEwebidentity${sts.issued.length + 1}Token`;
    sts.issued.push(token);
    onIssue(token);
    const expiration = new Date(Date.now() + 3600_000).toISOString();
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(
      `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
        `<SubjectFromWebIdentityToken>system:serviceaccount:tollgate:gateway</SubjectFromWebIdentityToken>` +
        `<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/tollgate-gateway/${form.RoleSessionName}</Arn><AssumedRoleId>AROAEXAMPLE:${form.RoleSessionName}</AssumedRoleId></AssumedRoleUser>` +
        `<Credentials><SessionToken>${token}</SessionToken><SecretAccessKey>${FAKE_SECRET_KEY}</SecretAccessKey><Expiration>${expiration}</Expiration><AccessKeyId>${FAKE_ACCESS_KEY}</AccessKeyId></Credentials>` +
        `<Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.example</Provider><Audience>sts.amazonaws.com</Audience>` +
        `</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sts.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sts.close = () => new Promise((resolve) => server.close(() => resolve()));
  return sts;
}

describe('provider: bedrock with web identity (EKS IRSA), refreshed through STS after an expiry', () => {
  let dir: string;
  let fake: FakeBedrock;
  let sts: FakeSts;
  let gw: TestGateway;

  beforeAll(async () => {
    for (const name of AWS_VARIABLES) delete process.env[name];
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-irsa-'));
    const tokenFile = path.join(dir, 'token');
    await writeFile(tokenFile, WEB_IDENTITY_TOKEN);
    fake = await startFakeBedrock();
    // Each STS exchange issues a new session, the only one Bedrock then accepts; the ones before it expire.
    sts = await startFakeSts((token) => {
      if (fake.sessionToken) fake.expiredSessionTokens.add(fake.sessionToken);
      fake.sessionToken = token;
    });
    Object.assign(process.env, {
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
      AWS_ROLE_ARN: ROLE,
      AWS_ROLE_SESSION_NAME: 'tollgate-test',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_STS: sts.url,
      // Nothing else in the chain may answer: no shared files, no instance metadata.
      AWS_CONFIG_FILE: path.join(dir, 'no-config'),
      AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'no-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    gw = await startTestGateway([
      { apiVersion: API, kind: 'Upstream', metadata: { name: 'aws' }, spec: { provider: 'bedrock', baseURL: fake.url, bedrock: { region: 'us-east-1' } } },
      model('claude', [{ upstream: 'aws', model: CLAUDE }]),
      plan('pro', ['claude']),
      account('acme', 'pro'),
      apiKey(key),
    ]);
  });
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([fake?.close(), sts?.close()]);
    await rm(dir, { recursive: true, force: true });
    for (const name of AWS_VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it('the first request exchanges the token at STS; after the session expires, one refusal, a new exchange, the answer', async () => {
    const client = gw.client(key.key);
    expect((await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'via irsa' }] })).choices[0].message.content).toBe('You said: via irsa');
    expect(sts.calls).toHaveLength(1);
    expect(sts.calls[0]).toMatchObject({ RoleArn: ROLE, WebIdentityToken: WEB_IDENTITY_TOKEN, RoleSessionName: 'tollgate-test' });
    expect(fake.requests.map((r) => [r.headers['x-amz-security-token'], r.refused])).toEqual([[sts.issued[0], null]]);

    // The session runs out early (revoked, or the clock of the cache was wrong): Bedrock says expired.
    fake.expiredSessionTokens.add(sts.issued[0]);
    fake.requests.length = 0;
    expect((await client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'after expiry' }] })).choices[0].message.content).toBe('You said: after expiry');
    expect(sts.calls).toHaveLength(2);
    expect(fake.requests.map((r) => [r.headers['x-amz-security-token'], r.refused])).toEqual([[sts.issued[0], 'ExpiredTokenException'], [sts.issued[1], null]]);
    for (const secret of [...sts.issued, FAKE_SECRET_KEY, WEB_IDENTITY_TOKEN]) expect(gw.logText()).not.toContain(secret);
  });

  it('requests in flight together when the session expires all get their answers', async () => {
    const client = gw.client(key.key);
    const exchanges = sts.calls.length;
    fake.expiredSessionTokens.add(sts.issued.at(-1)!);
    fake.requests.length = 0;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => client.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: `together ${i}` }] })));
    expect(answers.map((a) => a.choices[0].message.content)).toEqual(Array.from({ length: 6 }, (_, i) => `You said: together ${i}`));
    // Each request was refused at most once; the new sessions came from STS, not from thin air.
    expect(fake.requests.filter((r) => r.refused === null)).toHaveLength(6);
    expect(fake.requests.filter((r) => r.refused === 'ExpiredTokenException').length).toBeLessThanOrEqual(6);
    expect(sts.calls.length).toBeGreaterThan(exchanges);
  });
});
