// The controller: informer events become work-queue keys (the object itself and every object that
// read it), each key is reconciled by its kind's evaluation, and only a status that differs from the
// one the object carries is written, through the /status subresource with the resourceVersion it
// was computed from. A key whose generation was already observed and whose inputs are unchanged is
// skipped without evaluating. Transitions worth a person's attention become Events. Reconciling,
// probing and the usage roll-up run only while this replica holds the leader Lease.
import { credentialRefs } from './probes.ts';
import { KINDS, type Condition, type Kind } from '@tollgate/crds';
import type { Logger } from 'pino';
import { canonical, findCondition, nextConditions } from './conditions.ts';
import type { EventInput, EventRecorder } from './events.ts';
import { keyOf, splitKey, type Informers, type Obj, type ObjectKey } from './informers.ts';
import { issueKey, ownerReference } from './key-issuer.ts';
import { abortable, paths, type KubeApi } from './kube-api.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { Prober } from './probes.ts';
import { evaluateAccount } from './reconcilers/account.ts';
import { evaluateApiKey, type IssueProblem } from './reconcilers/apikey.ts';
import { evaluateModel } from './reconcilers/model.ts';
import { ANY_MODEL, evaluatePlan } from './reconcilers/plan.ts';
import type { Evaluate, Evaluation, ReconcileContext } from './reconcilers/types.ts';
import { evaluateUpstream } from './reconcilers/upstream.ts';
import type { UsageCollector } from './usage.ts';
import { WorkQueue, type Outcome } from './work-queue.ts';

const EVALUATE: Record<Kind, Evaluate> = { Upstream: evaluateUpstream, Model: evaluateModel, Plan: evaluatePlan, Account: evaluateAccount, ApiKey: evaluateApiKey };

/** Condition transitions that become Events: [kind, type, status it moved to, event]. */
const TRANSITION_EVENTS: Array<[Kind, string, string, EventInput['type'], string]> = [
  ['ApiKey', 'Expired', 'True', 'Warning', 'KeyExpired'],
  ['ApiKey', 'Revoked', 'True', 'Normal', 'KeyRevoked'],
  ['Upstream', 'Reachable', 'False', 'Warning', 'UpstreamUnreachable'],
  ['Upstream', 'Reachable', 'True', 'Normal', 'UpstreamReachable'],
  ['Upstream', 'CredentialsValid', 'False', 'Warning', 'CredentialsRefused'],
  ['Account', 'BudgetExhausted', 'True', 'Warning', 'BudgetExhausted'],
  ['Model', 'TargetsAvailable', 'False', 'Warning', 'NoTargetAvailable'],
];

export interface ControllerOptions {
  keyPrefix: string;
  concurrency: number;
  retry: { baseDelayMs: number; maxDelayMs: number };
}

interface Seen {
  fingerprint: string;
  timed: boolean;
}

export class Controller {
  readonly queue: WorkQueue;
  #informers: Informers;
  #api: KubeApi;
  #log: Logger;
  #metrics: OperatorMetrics;
  #events: EventRecorder;
  #prober: Prober;
  #usage: UsageCollector;
  #options: ControllerOptions;
  #context: ReconcileContext;
  /** ref key → keys that read it; key → the refs it read last time. */
  #dependents = new Map<ObjectKey, Set<ObjectKey>>();
  #refsOf = new Map<ObjectKey, ObjectKey[]>();
  #seen = new Map<ObjectKey, Seen>();
  #leading = false;
  /** One per term of leadership: aborted when it ends, it abandons every write still in flight. */
  #term = new AbortController();

  constructor(deps: { informers: Informers; api: KubeApi; log: Logger; metrics: OperatorMetrics; events: EventRecorder; prober: Prober; usage: UsageCollector }, options: ControllerOptions) {
    this.#informers = deps.informers;
    // Every write this controller makes ends with the term it was made in.
    this.#api = abortable(deps.api, () => this.#term.signal);
    this.#log = deps.log;
    this.#metrics = deps.metrics;
    this.#events = deps.events;
    this.#prober = deps.prober;
    this.#usage = deps.usage;
    this.#options = options;
    this.#context = {
      informers: this.#informers,
      probe: (name) => this.#prober.results.get(name),
      usage: () => this.#usage.figures,
      now: () => new Date(),
    };
    this.queue = new WorkQueue((key) => this.#reconcile(key), { concurrency: options.concurrency, ...options.retry }, {
      onDepth: (depth) => this.#metrics.queueDepth.set(depth),
      onDone: (key, ms, error) => {
        const kind = splitKey(key)[0];
        this.#metrics.durations.observe({ kind }, ms / 1000);
        // Abandoned because the term ended (stopLeading): not a failure of the object.
        if (error && this.#term.signal.aborted) return;
        if (error) {
          this.#metrics.errors.inc({ kind });
          this.#metrics.reconciles.inc({ kind, result: 'error' });
          this.#log.warn({ key, err: (error as Error).message }, 'reconcile failed; retrying with backoff');
        }
      },
    });
    this.#informers.onObject((key) => this.#onObject(key));
  }

  /** Leadership won (and informers synced): reconcile everything, probe, roll usage up. */
  startLeading(): void {
    this.#leading = true;
    if (this.#term.signal.aborted) this.#term = new AbortController();
    this.#seen.clear();
    this.#referenceSecrets();
    for (const kind of KINDS) for (const object of this.#informers.list(kind)) this.queue.add(keyOf(kind, object.metadata.name));
    this.queue.start();
    this.#prober.start();
    this.#usage.start();
  }

  /**
   * Stops taking work and abandons what is in flight: the term's writes are aborted (a reconcile
   * cut short is redone by the next leader from scratch; every write carries a resourceVersion, so
   * none lands half-applied), probes and usage reads closed. Resolves once no reconcile runs.
   */
  async stopLeading(): Promise<void> {
    this.#leading = false;
    this.#term.abort(new Error('leadership ended'));
    this.#prober.stop();
    this.#usage.stop();
    this.queue.clear();
    await this.queue.stop();
  }

  /** Upstream probe finished or usage figures changed: queue who shows them. */
  probed(upstream: string): void {
    this.queue.add(keyOf('Upstream', upstream));
  }

  usageChanged(accounts: string[]): void {
    const all = accounts.includes('*');
    for (const account of this.#informers.list('Account')) if (all || accounts.includes(account.metadata.name)) this.queue.add(keyOf('Account', account.metadata.name));
    // An ApiKey's status shows its own spend: its account's usage changing re-evaluates it too.
    for (const key of this.#informers.list('ApiKey')) if (all || accounts.includes(key.spec?.account)) this.queue.add(keyOf('ApiKey', key.metadata.name));
  }

  #onObject(key: ObjectKey): void {
    const [kind] = splitKey(key);
    if (kind === 'Upstream') {
      this.#referenceSecrets();
      this.#prober.sync();
    }
    if (!this.#leading) return;
    if ((KINDS as string[]).includes(kind)) this.queue.add(key);
    for (const dependent of this.#dependents.get(key) ?? []) this.queue.add(dependent);
    if (kind === 'Model') for (const dependent of this.#dependents.get(ANY_MODEL) ?? []) this.queue.add(dependent);
  }

  #referenceSecrets(): void {
    const names = new Set<string>();
    for (const upstream of this.#informers.list('Upstream')) {
      for (const ref of credentialRefs(upstream)) if ('secretRef' in ref && typeof ref.secretRef?.name === 'string') names.add(ref.secretRef.name);
    }
    this.#informers.referenceSecrets(names);
  }

  async #reconcile(key: ObjectKey): Promise<Outcome> {
    if (!this.#leading) return;
    const [kindName, name] = splitKey(key);
    const kind = kindName as Kind;
    let object = this.#informers.get(kind, name);
    if (!object) {
      this.#forget(key);
      return;
    }
    const fingerprint = this.#fingerprint(key, object);
    const seen = this.#seen.get(key);
    if (seen && !seen.timed && seen.fingerprint === fingerprint && object.status?.observedGeneration === object.metadata.generation) {
      this.#metrics.reconciles.inc({ kind, result: 'skipped' });
      return;
    }
    let issueProblem: IssueProblem | undefined;
    if (kind === 'ApiKey') ({ object, issueProblem } = await this.#prepareApiKey(object));
    const evaluation = EVALUATE[kind](object, this.#context);
    if (kind === 'ApiKey' && object.status?.issuedAt === undefined && this.#issuedAt.has(name)) evaluation.fields.issuedAt = this.#issuedAt.get(name);
    const written = await this.#writeStatus(kind, object, evaluation);
    this.#remember(key, evaluation);
    this.#seen.set(key, { fingerprint: this.#fingerprint(key, object), timed: evaluation.requeueAfterMs !== undefined });
    this.#metrics.reconciles.inc({ kind, result: written ? 'written' : 'unchanged' });
    return evaluation.requeueAfterMs !== undefined ? { requeueAfterMs: evaluation.requeueAfterMs } : undefined;
  }

  #issuedAt = new Map<string, string>();

  /** An ApiKey's own writes before its status: the owner reference to its Account, and its key. */
  async #prepareApiKey(apiKey: Obj): Promise<{ object: Obj; issueProblem?: IssueProblem }> {
    const p = paths(this.#api.namespace);
    const account = this.#informers.get('Account', apiKey.spec?.account);
    const refs = apiKey.metadata.ownerReferences ?? [];
    // Deleting the Account deletes its keys: the garbage collector follows this reference (ADR 11).
    if (account?.metadata.uid && !refs.some((r) => r.kind === 'Account' && r.uid === account.metadata.uid)) {
      const others = refs.filter((r) => !(r.kind === 'Account' && r.apiVersion === account.apiVersion));
      const owner = { ...ownerReference(account, 'Account'), controller: false };
      apiKey = (await this.#api.request('PATCH', p.custom('ApiKey', apiKey.metadata.name), { metadata: { resourceVersion: apiKey.metadata.resourceVersion, ownerReferences: [...others, owner] } }, 'application/merge-patch+json')) as Obj;
    }
    const outcome = await issueKey(this.#api, apiKey, this.#options.keyPrefix);
    if (!outcome) return { object: apiKey };
    if ('problem' in outcome) return { object: apiKey, issueProblem: outcome.problem };
    const issuedAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.#issuedAt.set(apiKey.metadata.name, issuedAt);
    const updated = { ...apiKey, metadata: { ...apiKey.metadata, resourceVersion: outcome.resourceVersion }, spec: { ...apiKey.spec, keyHash: outcome.keyHash } };
    // The hash prefix only: enough to match `kubectl get apikey -o yaml`, never the key.
    await this.#events.record('ApiKey', updated, { type: 'Normal', reason: 'KeyIssued', message: `${outcome.issued === 'new' ? 'issued a new key' : 'recovered the key already'} in Secret ${apiKey.spec.secretName} (field apiKey); spec.keyHash ${outcome.keyHash.slice(0, 15)}…` }, this.#term.signal);
    return { object: updated };
  }

  async #writeStatus(kind: Kind, object: Obj, evaluation: Evaluation): Promise<boolean> {
    const generation = object.metadata.generation ?? 0;
    const previous = (object.status ?? {}) as { conditions?: Condition[]; [field: string]: unknown };
    const conditions = nextConditions(previous.conditions, evaluation.conditions, generation, new Date());
    const fields = Object.fromEntries(Object.entries(evaluation.fields).filter(([, v]) => v !== undefined));
    const desired = { ...fields, observedGeneration: generation, conditions };
    if (canonical(desired) === canonical(previous)) return false;
    // A merge patch: fields the status no longer has are set to null, which removes them.
    const removals = Object.fromEntries(Object.keys(previous).filter((k) => !(k in desired)).map((k) => [k, null]));
    await this.#api.request('PATCH', paths(this.#api.namespace).status(kind, object.metadata.name), { metadata: { resourceVersion: object.metadata.resourceVersion }, status: { ...removals, ...desired } }, 'application/merge-patch+json');
    this.#metrics.writes.inc({ kind });
    for (const [eventKind, type, to, eventType, reason] of TRANSITION_EVENTS) {
      if (eventKind !== kind) continue;
      const before = findCondition(previous, type);
      const after = conditions.find((c) => c.type === type);
      if (!after || after.status !== to || before?.status === to) continue;
      // Reachable again is news only after it was unreachable, not after the first probe.
      if (reason === 'UpstreamReachable' && before?.status !== 'False') continue;
      await this.#events.record(kind, object, { type: eventType, reason, message: after.message }, this.#term.signal);
    }
    return true;
  }

  #fingerprint(key: ObjectKey, object: Obj): string {
    const [kind, name] = splitKey(key);
    const external = kind === 'Upstream' ? (this.#prober.results.get(name)?.at ?? '') : kind === 'Account' ? (this.#usage.figures?.at ?? '') : '';
    const refs = (this.#refsOf.get(key) ?? []).map((ref) => (ref === ANY_MODEL ? this.#informers.list('Model').map((m) => m.metadata.name).sort().join(',') : `${ref}@${this.#informers.version(ref)}`));
    return `${object.metadata.uid}:${object.metadata.generation}:${external}:${refs.join('|')}`;
  }

  #remember(key: ObjectKey, evaluation: Evaluation): void {
    for (const ref of this.#refsOf.get(key) ?? []) this.#dependents.get(ref)?.delete(key);
    this.#refsOf.set(key, evaluation.refs);
    for (const ref of evaluation.refs) {
      let set = this.#dependents.get(ref);
      if (!set) this.#dependents.set(ref, (set = new Set()));
      set.add(key);
    }
  }

  #forget(key: ObjectKey): void {
    for (const ref of this.#refsOf.get(key) ?? []) this.#dependents.get(ref)?.delete(key);
    this.#refsOf.delete(key);
    this.#seen.delete(key);
    this.queue.forget(key);
    const [kind, name] = splitKey(key);
    if (kind === 'ApiKey') this.#issuedAt.delete(name);
  }
}
