// Account.spec.members and Plan.spec.billing: what the file source and `tollgate validate` accept and
// refuse, and the rule the API server gets in the CRD.
import { describe, expect, it } from 'vitest';
import { crdFor } from './crd-yaml.ts';
import { validateManifest } from './validate.ts';

const account = (members: unknown[]) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Account', metadata: { name: 'acme' }, spec: { members } });
const problems = (manifest: unknown) => {
  const checked = validateManifest(manifest);
  return checked.ok ? [] : checked.problems.map((p) => `${p.field} ${p.message}`);
};

describe('Account.spec.members', () => {
  it('takes e-mail addresses and IdP subjects, each an owner or a member', () => {
    expect(problems(account([{ email: 'ada@example.com', role: 'owner' }, { subject: '248289761001', role: 'member' }]))).toEqual([]);
  });
  it('refuses a member with both or neither of email and subject, an unknown role, or a malformed address', () => {
    expect(problems(account([{ email: 'ada@example.com', subject: 'x', role: 'owner' }]))).toEqual(['spec.members[0] a member names exactly one of email or subject']);
    expect(problems(account([{ role: 'owner' }]))).toEqual(['spec.members[0] a member names exactly one of email or subject']);
    expect(problems(account([{ email: 'ada@example.com', role: 'admin' }])).join()).toMatch(/spec\.members\[0\]\.role/);
    expect(problems(account([{ email: 'not an address', role: 'owner' }])).join()).toMatch(/spec\.members\[0\]\.email/);
    expect(problems(account([{ email: 'ada@example.com', role: 'owner', admin: true }])).join()).toMatch(/admin/);
  });
  it('gives the API server the same rule (CEL on each member)', () => {
    const text = JSON.stringify(crdFor('Account'));
    expect(text).toContain('has(self.email) != has(self.subject)');
  });
});

describe('Plan.spec.billing.paymentLink', () => {
  const plan = (paymentLink: string) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Plan', metadata: { name: 'pro' }, spec: { models: ['gpt-4o'], billing: { paymentLink } } });
  it('is an https URL', () => {
    expect(problems(plan('https://buy.stripe.com/test_123'))).toEqual([]);
    expect(problems(plan('http://buy.stripe.com/test_123')).join()).toMatch(/paymentLink/);
    expect(problems(plan('javascript:alert(1)')).join()).toMatch(/paymentLink/);
  });
});
