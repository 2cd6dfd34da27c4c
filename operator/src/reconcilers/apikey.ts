// ApiKey: does its account exist (ResolvedRefs), is it revoked, has it expired (re-queued for the
// moment it does), and has a key been issued (phase Pending until spec.keyHash is set)? Issuing the
// key into spec.secretName is a write the controller does before this evaluation (key-issuer.ts).
import { condition, readyFrom, type ConditionInput } from '../conditions.ts';
import { keyOf, type Obj } from '../informers.ts';
import { formatMicros, microsOf } from '../usage.ts';
import type { Evaluation, ReconcileContext } from './types.ts';

/** setTimeout's limit; a later expiry is re-checked at this horizon. */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface IssueProblem {
  reason: string;
  message: string;
}

export function evaluateApiKey(apiKey: Obj, context: ReconcileContext, issueProblem?: IssueProblem): Evaluation {
  const spec = apiKey.spec ?? {};
  const refs = [keyOf('Account', spec.account)];
  if (spec.secretName) refs.push(keyOf('Secret', spec.secretName));
  const account = context.informers.get('Account', spec.account);
  let resolved: ConditionInput;
  if (!account) resolved = condition('ResolvedRefs', 'False', 'AccountNotFound', `Account "${spec.account}" (spec.account) does not exist; the gateway refuses this key with 401 until it is created`);
  else if (issueProblem) resolved = condition('ResolvedRefs', 'False', issueProblem.reason, issueProblem.message);
  else if (!spec.keyHash && spec.secretName) resolved = condition('ResolvedRefs', 'False', 'KeyPending', `the key is being issued into Secret ${spec.secretName}`);
  else resolved = condition('ResolvedRefs', 'True', 'Resolved', spec.secretName ? `account ${spec.account}; key in Secret ${spec.secretName}` : `account ${spec.account}`);

  const revoked = spec.revoked === true
    ? condition('Revoked', 'True', 'RevokedInSpec', 'spec.revoked is true: the gateway answers 401 for this key. Delete the ApiKey, or set revoked: false to restore it')
    : condition('Revoked', 'False', 'Active', 'not revoked');
  const now = context.now().getTime();
  const expiresAt = spec.expiresAt ? Date.parse(spec.expiresAt) : NaN;
  let expired: ConditionInput;
  let requeueAfterMs: number | undefined;
  if (Number.isNaN(expiresAt)) expired = condition('Expired', 'False', 'NoExpiry', 'no spec.expiresAt: the key does not expire');
  else if (expiresAt <= now) expired = condition('Expired', 'True', 'ExpiresAtPassed', `expired at ${spec.expiresAt}: the gateway answers 401. Set a later spec.expiresAt or issue a new key`);
  else {
    expired = condition('Expired', 'False', 'NotExpired', `expires at ${spec.expiresAt}`);
    requeueAfterMs = Math.min(MAX_DELAY_MS, expiresAt - now + 50);
  }
  const own = [resolved, revoked, expired];
  const ready = readyFrom(own, { ResolvedRefs: 'True', Revoked: 'False', Expired: 'False' }, `usable by account ${spec.account}`);
  // Its own spend and counts this month (the account's roll-up, by ApiKey name).
  const figures = context.usage();
  const counted = figures?.keys[apiKey.metadata.name];
  const usage = figures
    ? { month: figures.month, inputTokens: counted?.inputTokens ?? 0, outputTokens: counted?.outputTokens ?? 0, requests: counted?.requests ?? 0, spend: `${formatMicros(microsOf(counted?.spend))} ${figures.currency}` }
    : apiKey.status?.usage;
  const phase = revoked.status === 'True' ? 'Revoked' : expired.status === 'True' ? 'Expired' : spec.keyHash && account ? 'Active' : 'Pending';
  return {
    fields: { phase, revoked: revoked.status === 'True', expired: expired.status === 'True', issuedAt: apiKey.status?.issuedAt, usage },
    conditions: [ready, ...own],
    refs,
    requeueAfterMs,
  };
}
