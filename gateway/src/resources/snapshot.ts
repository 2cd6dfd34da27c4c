// An immutable view of every resource, built once per change and swapped atomically, so a request
// sees either the old world or the new one and never half of a change. Everything a request needs
// (key by hash, the account's catalogue) is precomputed here, off the hot path.
import type { Account, AnyResource, ApiKey, Kind, Model, Plan, Upstream } from '@tollgate/crds';
import { matchesAny } from './glob.ts';

export const SERVICE_TEST_MODEL = 'service-test';
/** A fixed `created` for models that carry no creation time, so catalogues are stable. */
const DEFAULT_CREATED = 1735689600;

export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

export interface Catalogue {
  entries: readonly ModelEntry[];
  byId: ReadonlyMap<string, ModelEntry>;
}

export const SERVICE_TEST_ENTRY: ModelEntry = Object.freeze({ id: SERVICE_TEST_MODEL, object: 'model', created: DEFAULT_CREATED, owned_by: 'tollgate' });

export class Snapshot {
  readonly keysByHash: ReadonlyMap<string, ApiKey>;
  readonly accounts: ReadonlyMap<string, Account>;
  readonly plans: ReadonlyMap<string, Plan>;
  readonly models: ReadonlyMap<string, Model>;
  readonly upstreams: ReadonlyMap<string, Upstream>;
  /** Reference problems that do not make the snapshot unusable (dangling plan, unknown upstream …). */
  readonly warnings: readonly string[];
  readonly builtAt = Date.now();
  private readonly catalogueByPlan = new Map<string, Catalogue>();
  private readonly freeCatalogue: Catalogue;

  constructor(resources: readonly AnyResource[]) {
    const byKind = <K extends Kind>(kind: K) =>
      new Map(resources.filter((r) => r.kind === kind).map((r) => [r.metadata.name, r as Extract<AnyResource, { kind: K }>]));
    const warnings: string[] = [];
    this.accounts = byKind('Account');
    this.plans = byKind('Plan');
    this.upstreams = byKind('Upstream');
    const models = byKind('Model');
    if (models.delete(SERVICE_TEST_MODEL)) warnings.push(`Model ${SERVICE_TEST_MODEL}: the name is reserved for the built-in model; the manifest is ignored`);
    this.models = models;
    for (const model of models.values()) {
      for (const target of model.spec.targets) {
        if (!this.upstreams.has(target.upstream)) warnings.push(`Model ${model.metadata.name}: target upstream ${target.upstream} does not exist`);
      }
    }
    const keys = new Map<string, ApiKey>();
    for (const key of byKind('ApiKey').values()) {
      if (!this.accounts.has(key.spec.account)) warnings.push(`ApiKey ${key.metadata.name}: account ${key.spec.account} does not exist; the key is refused`);
      // An ApiKey with only spec.secretName waits for the operator to issue a key and write its hash.
      if (key.spec.keyHash) keys.set(key.spec.keyHash, key);
      else warnings.push(`ApiKey ${key.metadata.name}: no keyHash yet (the operator issues one into spec.secretName); the key is not usable`);
    }
    this.keysByHash = keys;
    for (const account of this.accounts.values()) {
      const plan = account.spec.plan;
      if (plan && !this.plans.has(plan)) warnings.push(`Account ${account.metadata.name}: plan ${plan} does not exist; the account gets the free tier`);
    }
    this.freeCatalogue = toCatalogue([SERVICE_TEST_ENTRY]);
    for (const plan of this.plans.values()) this.catalogueByPlan.set(plan.metadata.name, this.buildCatalogue(plan));
    this.warnings = warnings;
  }

  planOf(account: Account): Plan | null {
    return (account.spec.plan && this.plans.get(account.spec.plan)) || null;
  }

  /** The models a key of this account may use: `service-test` always, plus its plan's models. */
  catalogueFor(account: Account): Catalogue {
    const plan = this.planOf(account);
    return (plan && this.catalogueByPlan.get(plan.metadata.name)) || this.freeCatalogue;
  }

  private buildCatalogue(plan: Plan): Catalogue {
    const entries = [SERVICE_TEST_ENTRY];
    for (const model of this.models.values()) {
      if (!matchesAny(model.metadata.name, plan.spec.models)) continue;
      const created = model.metadata.creationTimestamp ? Math.floor(Date.parse(model.metadata.creationTimestamp) / 1000) : DEFAULT_CREATED;
      entries.push({ id: model.metadata.name, object: 'model', created, owned_by: model.spec.ownedBy ?? 'tollgate' });
    }
    entries.sort((a, b) => (a.id === SERVICE_TEST_MODEL ? -1 : b.id === SERVICE_TEST_MODEL ? 1 : a.id.localeCompare(b.id)));
    return toCatalogue(entries);
  }
}

function toCatalogue(entries: ModelEntry[]): Catalogue {
  return { entries: Object.freeze(entries), byId: new Map(entries.map((e) => [e.id, e])) };
}
