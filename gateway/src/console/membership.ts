// Which accounts a signed-in user may see, and as what: Account.spec.members names people by verified
// e-mail address or by IdP subject; a one-time link grants its account as owner. Nothing else does.
import type { Account } from '@tollgate/crds';
import type { Snapshot } from '../resources/snapshot.ts';
import type { Session } from './session.ts';

export type Role = 'owner' | 'member';

export interface Membership {
  account: Account;
  role: Role;
}

export function roleIn(account: Account, session: Session): Role | null {
  if (session.grants?.includes(account.metadata.name)) return 'owner';
  let role: Role | null = null;
  for (const member of account.spec.members ?? []) {
    // An unverified address proves nothing: anyone can type one into a self-service IdP.
    const matches = member.subject !== undefined ? member.subject === session.subject : session.emailVerified && session.email !== null && member.email?.toLowerCase() === session.email;
    if (matches && (role === null || member.role === 'owner')) role = member.role;
  }
  return role;
}

export function membershipsOf(snapshot: Snapshot, session: Session): Membership[] {
  const found: Membership[] = [];
  for (const account of snapshot.accounts.values()) {
    const role = roleIn(account, session);
    if (role) found.push({ account, role });
  }
  return found.sort((a, b) => a.account.metadata.name.localeCompare(b.account.metadata.name));
}

/** The account by name if the user may see it; otherwise null, which the routes answer as 404 (no hint that it exists). */
export function membershipIn(snapshot: Snapshot, session: Session, name: string): Membership | null {
  const account = snapshot.accounts.get(name);
  if (!account) return null;
  const role = roleIn(account, session);
  return role ? { account, role } : null;
}
