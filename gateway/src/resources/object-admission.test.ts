import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Kind } from '@tollgate/crds';
import { ObjectAdmission } from './object-admission.ts';
import type { KubeObject } from '@tollgate/kube';

function logger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { log: pino(sink), lines };
}

const account = (name: string, resourceVersion: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Account', metadata: { name, resourceVersion }, spec });
const admit = (admission: ObjectAdmission, accounts: KubeObject[]) => admission.admit(new Map<Kind, KubeObject[]>([['Account', accounts]]));

describe('ObjectAdmission', () => {
  it('refuses an invalid object once per resourceVersion, serving its last good version meanwhile', () => {
    const { log, lines } = logger();
    const admission = new ObjectAdmission(log.child({ namespace: 'ns' }));
    expect(admit(admission, [account('a', '1', { plan: 'pro' })]).resources.map((r) => r.spec)).toEqual([{ plan: 'pro' }]);

    const refused = admit(admission, [account('a', '2', { plan: 'pro', credit: 1 }), account('b', '3', {})]);
    expect(refused.resources.map((r) => [r.metadata.name, r.metadata.resourceVersion])).toEqual([['a', '1'], ['b', '3']]);
    expect(refused.refusals).toEqual(['Account a (resourceVersion 2): spec.credit is not a known field; its last good version (resourceVersion 1) keeps serving']);
    admit(admission, [account('a', '2', { plan: 'pro', credit: 1 })]);
    expect(lines.filter((l) => l.level === 50)).toEqual([expect.objectContaining({ kind: 'Account', name: 'a', namespace: 'ns', resourceVersion: '2', field: 'spec.credit', reason: 'is not a known field' })]);
  });

  it('does not serve a new object that was never valid, and forgets last good versions of deleted objects', () => {
    const { log } = logger();
    const admission = new ObjectAdmission(log.child({ namespace: 'ns' }));
    expect(admit(admission, [account('new', '1', { plan: 5 })]).resources).toEqual([]);
    admit(admission, [account('gone', '2', {})]);
    admit(admission, []);
    // Re-created invalid: the version before the deletion must not come back.
    const result = admit(admission, [account('gone', '4', { plan: 5 })]);
    expect(result.resources).toEqual([]);
    expect(result.refusals[0]).toContain('it is not served');
  });
});
