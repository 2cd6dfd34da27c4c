import { describe, expect, it } from 'vitest';
import type { Kind } from '@tollgate/crds';
import type { Informers, Obj } from '../informers.ts';
import type { ProbeResult } from '../probes.ts';
import type { UsageFigures } from '../usage.ts';
import { evaluateAccount } from './account.ts';
import { evaluateApiKey } from './apikey.ts';
import { evaluateModel } from './model.ts';
import { evaluatePlan } from './plan.ts';
import type { ReconcileContext } from './types.ts';
import { evaluateUpstream } from './upstream.ts';

const obj = (name: string, spec: unknown, status?: unknown): Obj => ({ metadata: { name, uid: `uid-${name}`, generation: 1, resourceVersion: '1' }, spec, status });

function world(objects: Partial<Record<Kind | 'Secret', Obj[]>>, extra: { probes?: Record<string, ProbeResult>; usage?: UsageFigures | null; now?: string } = {}): ReconcileContext {
  const find = (kind: string, name: string) => (objects[kind as Kind] ?? []).find((o) => o.metadata.name === name);
  const informers = { get: find, list: (kind: Kind) => objects[kind] ?? [], secret: (name: string) => find('Secret', name) } as unknown as Informers;
  return { informers, probe: (name) => extra.probes?.[name], usage: () => extra.usage ?? null, now: () => new Date(extra.now ?? '2026-11-22T12:00:00Z') };
}
const cond = (evaluation: { conditions: Array<{ type: string }> }, type: string) => evaluation.conditions.find((c) => c.type === type) as unknown as { status: string; reason: string; message: string };
const probe = (fields: Partial<ProbeResult>): ProbeResult => ({ at: '2026-11-22T12:00:00Z', reachable: true, httpStatus: 200, latencyMs: 12, failures: 0, ...fields });

describe('ApiKey', () => {
  it('reports a missing account on the key, and names the account', () => {
    const e = evaluateApiKey(obj('k', { account: 'ghost', keyHash: 'sha256:x' }), world({}));
    expect(cond(e, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'AccountNotFound' });
    expect(cond(e, 'ResolvedRefs').message).toContain('Account "ghost"');
    expect(cond(e, 'Ready')).toMatchObject({ status: 'False', reason: 'AccountNotFound' });
    expect(e.refs).toEqual(['Account/ghost']);
    expect(e.fields.phase).toBe('Pending');
  });

  it('is Ready with an account, Revoked when revoked, Expired after expiresAt and re-queued for that moment before', () => {
    const accounts = { Account: [obj('acme', {})] };
    const active = evaluateApiKey(obj('k', { account: 'acme', keyHash: 'sha256:x', expiresAt: '2026-11-22T12:00:30Z' }), world(accounts));
    expect(cond(active, 'Ready').status).toBe('True');
    expect(cond(active, 'Expired')).toMatchObject({ status: 'False', reason: 'NotExpired' });
    expect(active.requeueAfterMs).toBeGreaterThanOrEqual(30_000);
    expect(active.requeueAfterMs).toBeLessThan(31_000);
    expect(active.fields.phase).toBe('Active');
    const expired = evaluateApiKey(obj('k', { account: 'acme', keyHash: 'sha256:x', expiresAt: '2026-11-22T11:00:00Z' }), world(accounts));
    expect(cond(expired, 'Expired').status).toBe('True');
    expect(cond(expired, 'Ready')).toMatchObject({ status: 'False', reason: 'ExpiresAtPassed' });
    expect(expired.fields.phase).toBe('Expired');
    const revoked = evaluateApiKey(obj('k', { account: 'acme', keyHash: 'sha256:x', revoked: true }), world(accounts));
    expect(cond(revoked, 'Revoked').status).toBe('True');
    expect(revoked.fields).toMatchObject({ phase: 'Revoked', revoked: true });
  });

  it('waits for its key while only spec.secretName is set', () => {
    const e = evaluateApiKey(obj('k', { account: 'acme', secretName: 'k-key' }), world({ Account: [obj('acme', {})] }));
    expect(cond(e, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'KeyPending' });
    expect(e.refs).toEqual(['Account/acme', 'Secret/k-key']);
  });
});

describe('Account', () => {
  it('reports a missing plan on the account and heals when the plan exists', () => {
    const account = obj('acme', { plan: 'gold' });
    expect(cond(evaluateAccount(account, world({})), 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'PlanNotFound' });
    expect(cond(evaluateAccount(account, world({ Plan: [obj('gold', { models: [] })] })), 'Ready').status).toBe('True');
  });

  it('rolls usage into status and flags an exhausted budget', () => {
    const plan = obj('gold', { models: ['*'], limits: { tokensPerMonth: 1000 } });
    const usage = (input: number): UsageFigures => ({ month: '2026-11', replicas: 2, at: 'x', currency: 'USD', keys: {}, accounts: { acme: { inputTokens: input, outputTokens: 100, requests: 3 } } });
    const within = evaluateAccount(obj('acme', { plan: 'gold' }), world({ Plan: [plan] }, { usage: usage(400) }));
    expect(within.fields.usage).toMatchObject({ month: '2026-11', inputTokens: 400, outputTokens: 100, requests: 3, budgetRemaining: 500, resetsAt: '2026-12-01T00:00:00Z' });
    expect(cond(within, 'BudgetExhausted').status).toBe('False');
    const over = evaluateAccount(obj('acme', { plan: 'gold' }), world({ Plan: [plan] }, { usage: usage(950) }));
    expect(cond(over, 'BudgetExhausted')).toMatchObject({ status: 'True', reason: 'BudgetUsedUp' });
    expect(cond(over, 'Ready').status).toBe('False');
    expect(over.fields.usage).toMatchObject({ budgetRemaining: -50 });
  });

  it("shows this month's spend on the account, what its spend budget leaves, and each key's own spend", () => {
    const plan = obj('gold', { models: ['*'], limits: { spendPerMonth: '5.00' } });
    const figures: UsageFigures = {
      month: '2026-11',
      replicas: 1,
      at: 'x',
      currency: 'USD',
      accounts: { acme: { inputTokens: 1, outputTokens: 1, requests: 2, spend: '1.254215' } },
      keys: { ci: { account: 'acme', inputTokens: 1, outputTokens: 1, requests: 1, spend: '1.25' } },
    };
    const account = evaluateAccount(obj('acme', { plan: 'gold' }), world({ Plan: [plan] }, { usage: figures }));
    expect(account.fields.usage).toMatchObject({ spend: '1.254215 USD', spendRemaining: '3.745785 USD', resetsAt: '2026-12-01T00:00:00Z' });
    const key = evaluateApiKey(obj('ci', { account: 'acme', keyHash: 'sha256:x' }), world({ Account: [obj('acme', {})] }, { usage: figures }));
    expect(key.fields.usage).toEqual({ month: '2026-11', inputTokens: 1, outputTokens: 1, requests: 1, spend: '1.25 USD' });
    const idle = evaluateApiKey(obj('idle', { account: 'acme', keyHash: 'sha256:x' }), world({ Account: [obj('acme', {})] }, { usage: figures }));
    expect(idle.fields.usage).toMatchObject({ requests: 0, spend: '0.00 USD' });
  });
});

describe('Plan', () => {
  it('names each missing model; globs must match something', () => {
    const e = evaluatePlan(obj('gold', { models: ['gpt-4o', 'service-test', 'llama-*'] }), world({ Model: [obj('mistral', {})] }));
    expect(cond(e, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'ModelNotFound' });
    expect(cond(e, 'ResolvedRefs').message).toContain('Model "gpt-4o" does not exist');
    expect(cond(e, 'ResolvedRefs').message).toContain('"llama-*" matches no Model');
    const healed = evaluatePlan(obj('gold', { models: ['gpt-4o', 'llama-*'] }), world({ Model: [obj('gpt-4o', {}), obj('llama-3', {})] }));
    expect(cond(healed, 'Ready').status).toBe('True');
  });
});

describe('Model', () => {
  const ready = (models?: string[]) => ({ conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: '' }], models });
  it('lists which targets can serve', () => {
    const model = obj('gpt-4o', { targets: [{ upstream: 'a' }, { upstream: 'b', model: 'gpt-4o-2024' }, { upstream: 'gone' }] });
    const e = evaluateModel(model, world({ Upstream: [obj('a', {}, ready(['gpt-4o'])), obj('b', {}, ready(['other']))] }));
    expect(e.fields.targets).toEqual([
      { upstream: 'a', model: 'gpt-4o', available: true },
      expect.objectContaining({ upstream: 'b', model: 'gpt-4o-2024', available: false }),
      expect.objectContaining({ upstream: 'gone', available: false, message: 'Upstream gone does not exist' }),
    ]);
    expect(cond(e, 'TargetsAvailable')).toMatchObject({ status: 'True' });
    expect(cond(e, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'UpstreamNotFound' });
  });
});

describe('Upstream', () => {
  const upstream = obj('openai', { baseURL: 'https://api.example/v1', credentials: { secretRef: { name: 'openai-key', key: 'apiKey' } } });
  const secret = { metadata: { name: 'openai-key' }, data: { apiKey: 'c2stMQ==' } } as Obj;
  it('turns probe results into Reachable and CredentialsValid', () => {
    const ok = evaluateUpstream(upstream, world({ Secret: [secret] }, { probes: { openai: probe({ models: ['gpt-4o'] }) } }));
    expect(cond(ok, 'Ready').status).toBe('True');
    expect(ok.fields).toMatchObject({ reachable: true, latencyMs: 12, models: ['gpt-4o'] });
    const refused = evaluateUpstream(upstream, world({ Secret: [secret] }, { probes: { openai: probe({ httpStatus: 401 }) } }));
    expect(cond(refused, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'CredentialsRefused' });
    expect(cond(refused, 'CredentialsValid').message).toContain('Secret openai-key');
    const down = evaluateUpstream(upstream, world({ Secret: [secret] }, { probes: { openai: probe({ reachable: false, httpStatus: 0, error: 'ECONNREFUSED', failures: 2 }) } }));
    expect(cond(down, 'Reachable')).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(cond(down, 'Ready').reason).toBe('Unreachable');
  });

  it('reports a missing Secret and keeps the last probe verdict before its own first probe', () => {
    const missing = evaluateUpstream(upstream, world({}));
    expect(cond(missing, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    expect(missing.refs).toEqual(['Secret/openai-key']);
    const previous = { conditions: [{ type: 'Reachable', status: 'True', reason: 'Answered', message: 'ok', lastTransitionTime: 'x' }], reachable: true, latencyMs: 5 };
    const kept = evaluateUpstream({ ...upstream, status: previous }, world({ Secret: [secret] }));
    expect(cond(kept, 'Reachable')).toMatchObject({ status: 'True', reason: 'Answered' });
    expect(kept.fields.latencyMs).toBe(5);
  });
});
