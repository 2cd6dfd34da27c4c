// A real OpenID provider for the account area's tests: the `oidc-provider` package (the certified
// implementation openid-client is tested against), on a free loopback port, with its development
// login and consent pages. Any login name is accepted; `users` gives each its e-mail claim.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export async function startTestIdp(redirectUri: string, users: Record<string, { email: string; name?: string; emailVerified?: boolean }>): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'tollgate-console';
  const clientSecret = 'test-client-secret-0123456789abcdef';
  const provider = new Provider(issuer, {
    clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri], response_types: ['code'], grant_types: ['authorization_code'], token_endpoint_auth_method: 'client_secret_basic' }],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['test-cookie-key-for-the-idp'] },
    features: { devInteractions: { enabled: true } },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    async findAccount(_ctx, sub) {
      const user = users[sub];
      if (!user) return undefined;
      return { accountId: sub, claims: async () => ({ sub, email: user.email, email_verified: user.emailVerified ?? true, name: user.name ?? sub }) };
    },
  });
  // The development pages are all this IdP serves; its warnings about them are expected here.
  provider.on('server_error', (_ctx, error) => console.error('oidc-provider error', error));
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
