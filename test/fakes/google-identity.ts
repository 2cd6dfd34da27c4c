// A fake of the places Google's Application Default Credentials get a token from: the metadata server
// (GKE Workload Identity, Cloud Run, GCE: the token GET that needs `Metadata-Flavor: Google` and
// answers with it), the OAuth token endpoint's refresh-token grant (gcloud's authorized_user), STS's
// token exchange (workload identity federation) and IAM Credentials' generateAccessToken
// (impersonation), answering in their wire formats and refusing as they do. Every token it issues is
// handed to `onIssue`, so that the fake Vertex AI accepts exactly those. Google's own client library
// (google-auth-library) is pointed at it in provider-vertex-adc.test.ts to prove it faithful.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const METADATA_TOKEN_PATH = '/computeMetadata/v1/instance/service-accounts/default/token';
export const USER = { clientId: '764086051850-test.apps.googleusercontent.com', clientSecret: 'd-FL95Q19q7MQmFpd7hHD0Ty', refreshToken: '1//0gfake-refresh-token-of-a-user' };
export const FEDERATION = { audience: '//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/aks', subjectToken: 'eyJhbGciOiJSUzI1NiJ9.aks-projected-token.sig', serviceAccount: 'tollgate@proj-1.iam.gserviceaccount.com' };

export interface IssuedToken {
  value: string;
  /** Who got it: the metadata server, the refresh grant, STS, impersonation. */
  by: 'metadata' | 'refresh' | 'sts' | 'impersonation';
  issuedAt: number;
  expiresAt: number;
}

export interface FakeGoogleIdentity {
  url: string;
  /** `host:port`, as GCE_METADATA_HOST takes it. */
  host: string;
  tokenUri: string;
  issued: IssuedToken[];
  /** What each call carried: the metadata GETs (path and headers), the form POSTs. */
  metadataCalls: Array<{ path: string; flavor: string | undefined }>;
  forms: Array<Record<string, string>>;
  /** Lifetime of the next tokens, in seconds (3599 unless set). */
  lifetimeSeconds: number;
  /** Metadata token requests are held without an answer while true (a metadata server that hangs). */
  hold: boolean;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeGoogleIdentity(onIssue: (token: IssuedToken) => void): Promise<FakeGoogleIdentity> {
  const fake = { issued: [] as IssuedToken[], metadataCalls: [], forms: [], lifetimeSeconds: 3599, hold: false } as unknown as FakeGoogleIdentity;
  const held: ServerResponse[] = [];

  function issue(by: IssuedToken['by']): IssuedToken {
    const issuedAt = Date.now();
    const token = { value: `ya29.${by}-${randomBytes(16).toString('hex')}`, by, issuedAt, expiresAt: issuedAt + fake.lifetimeSeconds * 1000 };
    fake.issued.push(token);
    onIssue(token);
    return token;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname.startsWith('/computeMetadata/')) {
      const flavor = req.headers['metadata-flavor'] as string | undefined;
      fake.metadataCalls.push({ path: url.pathname + url.search, flavor });
      const metadata = { 'metadata-flavor': 'Google', server: 'Metadata Server for VM' };
      // The metadata server refuses a request without the header (a browser or an SSRF through a proxy).
      if (flavor !== 'Google') {
        res.writeHead(403, { ...metadata, 'content-type': 'text/html; charset=UTF-8' });
        return void res.end('Missing required header "Metadata-Flavor": "Google"\n');
      }
      if (req.method !== 'GET' || url.pathname !== METADATA_TOKEN_PATH) {
        res.writeHead(404, { ...metadata, 'content-type': 'text/html; charset=UTF-8' });
        return void res.end('Not Found\n');
      }
      if (fake.hold) return void held.push(res);
      const token = issue('metadata');
      return sendJson(res, 200, { access_token: token.value, expires_in: fake.lifetimeSeconds, token_type: 'Bearer' }, metadata);
    }
    const text = await readBody(req);
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = Object.fromEntries(new URLSearchParams(text));
      fake.forms.push(form);
      if (form.grant_type === 'refresh_token') {
        if (form.client_id !== USER.clientId || form.client_secret !== USER.clientSecret) return sendJson(res, 401, { error: 'invalid_client', error_description: 'The OAuth client was not found.' });
        if (form.refresh_token !== USER.refreshToken) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
        const token = issue('refresh');
        return sendJson(res, 200, { access_token: token.value, expires_in: fake.lifetimeSeconds, scope: 'https://www.googleapis.com/auth/cloud-platform openid', token_type: 'Bearer' });
      }
      if (form.grant_type === 'urn:ietf:params:oauth:grant-type:token-exchange') {
        if (form.audience !== FEDERATION.audience) return sendJson(res, 400, { error: 'invalid_target', error_description: 'The target service indicated by the "audience" parameters is invalid.' });
        if (form.subject_token !== FEDERATION.subjectToken || form.subject_token_type !== 'urn:ietf:params:oauth:token-type:jwt') return sendJson(res, 400, { error: 'invalid_grant', error_description: 'The audience in ID Token does not match the expected audience.' });
        if (form.requested_token_type !== 'urn:ietf:params:oauth:token-type:access_token') return sendJson(res, 400, { error: 'invalid_request', error_description: 'Invalid requested_token_type.' });
        const token = issue('sts');
        return sendJson(res, 200, { access_token: token.value, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: fake.lifetimeSeconds });
      }
      return sendJson(res, 400, { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${form.grant_type}` });
    }
    const impersonation = /^\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/.exec(url.pathname);
    if (req.method === 'POST' && impersonation) {
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      const caller = fake.issued.find((token) => token.value === bearer && token.by === 'sts' && token.expiresAt > Date.now());
      if (!caller) return sendJson(res, 401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } });
      if (decodeURIComponent(impersonation[1]) !== FEDERATION.serviceAccount) return sendJson(res, 403, { error: { code: 403, message: "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).", status: 'PERMISSION_DENIED' } });
      const body = JSON.parse(text || '{}') as { scope?: string[] };
      if (!body.scope?.includes('https://www.googleapis.com/auth/cloud-platform')) return sendJson(res, 400, { error: { code: 400, message: 'Scope required.', status: 'INVALID_ARGUMENT' } });
      const token = issue('impersonation');
      return sendJson(res, 200, { accessToken: token.value, expireTime: new Date(token.expiresAt).toISOString().replace(/\.\d+Z$/, 'Z') });
    }
    sendJson(res, 404, { error: { code: 404, message: 'Not Found', status: 'NOT_FOUND' } });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => sendJson(res, 500, { error: { code: 500, message: String(error), status: 'INTERNAL' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  fake.host = `127.0.0.1:${port}`;
  fake.url = `http://${fake.host}`;
  fake.tokenUri = `${fake.url}/token`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
