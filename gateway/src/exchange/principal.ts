// Who a request acts for, as authentication found it. A module of its own so that limits, routes and
// the exchange can all name it without importing each other.
import type { Account, ApiKey, Plan } from '@tollgate/crds';
import type { Catalogue, Snapshot } from '../resources/snapshot.ts';

export interface Principal {
  key: ApiKey;
  account: Account;
  plan: Plan | null;
  catalogue: Catalogue;
  /** The snapshot this request authenticated against; the rest of the request uses the same one. */
  snapshot: Snapshot;
}
