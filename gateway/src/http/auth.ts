// Bearer-key authentication for /v1. Lookup is one SHA-256 and one Map get, whatever the number of
// keys. The answer to every failure is 401 invalid_api_key, with a message that helps the developer
// (missing header, wrong scheme, malformed, unknown, revoked, expired) without echoing the key.
import type { Middleware } from 'koa';
import { invalidApiKey } from './errors.ts';
import { hashKey, isWellFormedKey, maskKey } from '../resources/keys.ts';
import type { ResourceStore } from '../resources/store.ts';
import type { GatewayState } from './state.ts';

export function authenticate(store: ResourceStore, prefix: string): Middleware<GatewayState> {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    // Anthropic's clients send the key as x-api-key (Claude Code's ANTHROPIC_API_KEY); Bearer is everyone else's.
    const anthropicKey = header ? '' : ctx.get('x-api-key');
    if (!header && !anthropicKey) {
      throw invalidApiKey("You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY' (or as x-api-key).", 'missing');
    }
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (header && scheme.toLowerCase() !== 'bearer') {
      throw invalidApiKey("The Authorization header must use the Bearer scheme: 'Authorization: Bearer YOUR_KEY'.", 'scheme');
    }
    const key = header ? header.slice(space + 1).trim() : anthropicKey.trim();
    if (!isWellFormedKey(key, prefix)) {
      throw invalidApiKey(`Malformed API key. Keys look like ${prefix}_sk_<secret>.`, 'malformed');
    }
    const snapshot = store.current;
    const apiKey = snapshot.keysByHash.get(hashKey(key));
    if (!apiKey) throw invalidApiKey(`Incorrect API key provided: ${maskKey(key)}.`, 'unknown');
    if (apiKey.spec.revoked) throw invalidApiKey('This API key has been revoked.', 'revoked');
    if (apiKey.spec.expiresAt && Date.parse(apiKey.spec.expiresAt) <= Date.now()) {
      throw invalidApiKey(`This API key expired at ${apiKey.spec.expiresAt}.`, 'expired');
    }
    const account = snapshot.accounts.get(apiKey.spec.account);
    if (!account) throw invalidApiKey('This API key belongs to no account.', 'no_account');
    ctx.state.exchange.principal = { key: apiKey, account, plan: snapshot.planOf(account), catalogue: snapshot.catalogueFor(account), snapshot };
    await next();
  };
}
