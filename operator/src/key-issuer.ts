// Keys issued in the cluster: an ApiKey with spec.secretName and no spec.keyHash gets a fresh key
// (the gateway's shape and prefix rules, @tollgate/crds) written once into that Secret, owned by the
// ApiKey so it goes when the key goes, then its hash into spec.keyHash. The Secret is created first:
// if the operator dies between the two writes, the next reconcile finds the Secret it owns and
// hashes the key already there instead of issuing a second one. An existing Secret that is not this
// ApiKey's is never touched. The key itself reaches only the Secret: not the ApiKey, a log or an event.
import { API_VERSION, generateKey, hashKey, isWellFormedKey } from '@tollgate/crds';
import type { Obj } from './informers.ts';
import { isAlreadyExists, isNotFound, paths, type KubeApi } from './kube-api.ts';

export const SECRET_KEY_FIELD = 'apiKey';

export type IssueOutcome = { issued: 'new' | 'recovered'; keyHash: string; resourceVersion: string } | { problem: { reason: string; message: string } } | null;

// No blockOwnerDeletion: setting it needs update on the owner's finalizers, which the operator is not granted.
export function ownerReference(owner: Obj, kind: string) {
  return { apiVersion: API_VERSION, kind, name: owner.metadata.name, uid: owner.metadata.uid!, controller: true };
}

/** Issues (or recovers) the key of an ApiKey that asks for one; null when there is nothing to do. */
export async function issueKey(api: KubeApi, apiKey: Obj, prefix: string): Promise<IssueOutcome> {
  const spec = apiKey.spec ?? {};
  if (!spec.secretName || spec.keyHash || apiKey.metadata.deletionTimestamp) return null;
  const p = paths(api.namespace);
  const secretName = spec.secretName as string;
  let existing: Obj | null = null;
  try {
    existing = (await api.request('GET', p.secrets(secretName))) as Obj;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  let key: string;
  let issued: 'new' | 'recovered';
  if (existing) {
    const ours = existing.metadata.ownerReferences?.some((ref) => ref.kind === 'ApiKey' && ref.uid === apiKey.metadata.uid);
    const stored = existing.data?.[SECRET_KEY_FIELD] ? Buffer.from(existing.data[SECRET_KEY_FIELD], 'base64').toString('utf8') : '';
    if (!ours) return { problem: { reason: 'SecretConflict', message: `Secret "${secretName}" (spec.secretName) already exists and is not owned by this ApiKey; the operator never overwrites it. Choose another secretName, or delete the Secret` } };
    if (!isWellFormedKey(stored, stored.split('_sk_')[0] || prefix)) return { problem: { reason: 'SecretMalformed', message: `Secret "${secretName}" is owned by this ApiKey but its ${SECRET_KEY_FIELD} is not a key; delete the Secret and the operator issues a new key` } };
    key = stored;
    issued = 'recovered';
  } else {
    key = generateKey(prefix);
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: secretName,
        labels: { 'app.kubernetes.io/managed-by': 'tollgate-operator', 'tollgate.dev/apikey': apiKey.metadata.name, 'tollgate.dev/account': String(spec.account) },
        ownerReferences: [ownerReference(apiKey, 'ApiKey')],
      },
      data: { [SECRET_KEY_FIELD]: Buffer.from(key).toString('base64') },
    };
    try {
      await api.request('POST', p.secrets(), secret);
    } catch (error) {
      // Created meanwhile (another writer, or our own earlier attempt): read it on the retry.
      if (isAlreadyExists(error)) throw new Error(`Secret ${secretName} appeared while issuing; retrying from a fresh read`);
      throw error;
    }
    issued = 'new';
  }
  const keyHash = hashKey(key);
  // The precondition makes a second writer (a stale leader) fail with 409 instead of overwriting.
  const patched = await api.request('PATCH', p.custom('ApiKey', apiKey.metadata.name), { metadata: { resourceVersion: apiKey.metadata.resourceVersion }, spec: { keyHash } }, 'application/merge-patch+json');
  return { issued, keyHash, resourceVersion: patched.metadata?.resourceVersion };
}
