import { describe, expect, it } from 'vitest';
import type { Account, ApiKey, Plan } from '@tollgate/crds';
import { Snapshot } from '../resources/snapshot.ts';
import type { Principal } from '../http/state.ts';
import { DEFAULT_FREE_LIMITS, LimitScopes } from './scopes.ts';

const API = 'tollgate.dev/v1alpha1';
const pro: Plan = { apiVersion: API, kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['service-test'], limits: { requestsPerMinute: 100, tokensPerMinute: 10_000, concurrentRequests: 4 } } };
const acme: Account = { apiVersion: API, kind: 'Account', metadata: { name: 'acme' }, spec: { plan: 'pro' } };
const hobby: Account = { apiVersion: API, kind: 'Account', metadata: { name: 'hobby' }, spec: {} };
const keyOf = (name: string, account: string, limits?: ApiKey['spec']['limits']): ApiKey => ({
  apiVersion: API,
  kind: 'ApiKey',
  metadata: { name },
  spec: { account, keyHash: `sha256:${'0'.repeat(64)}`, ...(limits ? { limits } : {}) },
});

function principal(snapshot: Snapshot, key: ApiKey): Principal {
  const account = snapshot.accounts.get(key.spec.account)!;
  return { key, account, plan: snapshot.planOf(account), catalogue: snapshot.catalogueFor(account), snapshot };
}

describe('LimitScopes', () => {
  it("applies the plan's limits to the account, and a key's only where they are lower", () => {
    const key = keyOf('ci', 'acme', { requestsPerMinute: 10, tokensPerMinute: 50_000 });
    const snapshot = new Snapshot([pro, acme, key]);
    expect(new LimitScopes('free').of(principal(snapshot, key), 1)).toEqual([
      { id: 'account:acme', label: 'account acme', account: 'acme', limits: { requestsPerMinute: 100, tokensPerMinute: 10_000, concurrentRequests: 4 }, keys: { open: 'account:acme:open', rpm: 'account:acme:rpm', tpm: 'account:acme:tpm', spend: 'account:acme:spend' } },
      { id: 'key:ci', label: 'API key ci', account: 'acme', limits: { requestsPerMinute: 10 }, keys: { open: 'key:ci:open', rpm: 'key:ci:rpm', tpm: 'key:ci:tpm', spend: 'key:ci:spend' } },
    ]);
  });

  it('gives each of N live replicas its share, never less than one', () => {
    const key = keyOf('k', 'acme');
    const snapshot = new Snapshot([pro, acme, key]);
    const [account] = new LimitScopes('free').of(principal(snapshot, key), 3);
    expect(account.limits).toEqual({ requestsPerMinute: 33, tokensPerMinute: 3333, concurrentRequests: 1 });
    const [many] = new LimitScopes('free').of(principal(snapshot, key), 10);
    expect(many.limits.concurrentRequests).toBe(1);
  });

  it('binds plan-less accounts to the Plan named for the free tier, or to the defaults', () => {
    const key = keyOf('h', 'hobby');
    const without = new Snapshot([hobby, key]);
    expect(new LimitScopes('free').of(principal(without, key), 1)[0].limits).toEqual(DEFAULT_FREE_LIMITS);
    const free: Plan = { apiVersion: API, kind: 'Plan', metadata: { name: 'starter' }, spec: { models: ['service-test'], limits: { requestsPerMinute: 5 } } };
    const withFree = new Snapshot([hobby, key, free]);
    expect(new LimitScopes('starter').of(principal(withFree, key), 1)[0].limits).toEqual({ requestsPerMinute: 5 });
  });
});
