// The Kubernetes source: the five tollgate.dev kinds of one namespace, followed by informers
// (reflector.ts), become the same immutable snapshot the file source builds. Bursts of events
// (a `kubectl apply -f dir/`, a relist) are debounced into one rebuild. The first snapshot is applied
// only once every collection has listed, so /readyz stays 503 until the gateway knows every key,
// rather than serving a partial world. Invalid objects are refused one by one (object-admission.ts).
// Beside the snapshot it keeps the data of referenced Secrets for upstream credentials
// (secret-index.ts) and the ready endpoints of the gateway's Service (replicas.ts). Read-only: the
// gateway never writes to the API.
import { KINDS, type Kind } from '@tollgate/crds';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config.ts';
import type { SecretLookup } from '../upstream/credentials.ts';
import { applyResources } from './apply.ts';
import { ObjectAdmission } from './object-admission.ts';
import { createKubeClient, loadKubeConfig, Reflector, type Collection, type KubeClient, type KubeObject } from '@tollgate/kube';
import { countReadyEndpoints, LiveReplicaCount, type EndpointSliceLike, type ReplicaCount } from './replicas.ts';
import { referencedSecrets, SecretIndex } from './secret-index.ts';
import type { ResourceSource, ResourceStore } from './store.ts';

export interface KubernetesSourceOptions {
  namespace: string;
  /** The gateway's own Service, whose EndpointSlices give the live replica count; null: count 1. */
  serviceName: string | null;
  relistIntervalMs: number;
  /** Quiet time after the last event before rebuilding; a steady stream still rebuilds every 10x this. */
  debounceMs: number;
  backoff?: { initialMs: number; maxMs: number };
  /** false: Secrets are not followed (the console's pods: they proxy nothing, so they need no credentials and no right to read Secrets). */
  followSecrets?: boolean;
}

export interface KubernetesSourceStatus {
  namespace: string;
  server: string;
  loadedAt: string | null;
  /** The objects refused right now (each line says whether a last good version serves instead). */
  lastError: string[] | null;
  /** Collections still waiting for their first list; nothing is served until this is empty. */
  waitingFor: string[];
}

export class KubernetesSource implements ResourceSource {
  readonly replicas: ReplicaCount;
  status: KubernetesSourceStatus;
  /** When the caches were last complete and the snapshot rebuilt or confirmed (ms since the epoch), for the sync-age metric. */
  lastSyncAt: number | null = null;
  #store: ResourceStore;
  #log: Logger;
  #options: KubernetesSourceOptions;
  #client: KubeClient;
  #kinds = new Map<Kind, Reflector>();
  #secrets: Reflector | null;
  #secretIndex = new SecretIndex();
  #slices: Reflector | null = null;
  #liveReplicas = new LiveReplicaCount();
  #admission: ObjectAdmission;
  #timer: NodeJS.Timeout | null = null;
  #firstPendingAt: number | null = null;
  #appliedFingerprint: string | null = null;
  #reportedWarnings: ReadonlySet<string> = new Set();
  #syncWaiters: Array<() => void> = [];
  #stopped = false;

  constructor(client: KubeClient, store: ResourceStore, log: Logger, options: KubernetesSourceOptions) {
    this.#client = client;
    this.#store = store;
    this.#log = log.child({ source: 'kubernetes', namespace: options.namespace });
    this.#options = options;
    this.replicas = this.#liveReplicas;
    this.#admission = new ObjectAdmission(this.#log);
    this.status = { namespace: options.namespace, server: client.server, loadedAt: null, lastError: null, waitingFor: [] };
    for (const kind of KINDS) {
      this.#kinds.set(kind, this.#reflector(client.tollgate(kind), withoutManagedFields, () => this.#onResourceChange(kind)));
    }
    this.#secrets = options.followSecrets === false ? null : this.#reflector(client.secrets(), this.#secretIndex.keep, () => this.#scheduleUntilServing());
    if (this.#secrets) this.#secretIndex.attach(this.#secrets.objects);
    if (options.serviceName) {
      this.#slices = this.#reflector(client.endpointSlices(options.serviceName), endpointsOnly, () => this.#countReplicas());
    }
    this.status.waitingFor = this.#reflectors().map((r) => r.kind);
  }

  /** Builds the client from the gateway configuration (kubeconfig file, or client-node's default search). */
  static fromConfig(config: GatewayConfig, store: ResourceStore, log: Logger): KubernetesSource {
    const { namespace, serviceName, kubeconfig, relistIntervalMs, debounceMs, followSecrets } = config.kubernetes;
    const client = createKubeClient(loadKubeConfig(kubeconfig), namespace);
    return new KubernetesSource(client, store, log, { namespace, serviceName, relistIntervalMs, debounceMs, followSecrets });
  }

  /** The Credentials hook: a Secret key's current value, or undefined when it is missing. */
  readonly secretLookup: SecretLookup = (name, key) => this.#secretIndex.lookup(name, key);

  /** Ready endpoints of the gateway's Service (at least 1; 1 when unknown). */
  liveReplicas(): number {
    return this.replicas.current();
  }

  /** Starts following; returns at once. Readiness (/readyz) turns on with the first snapshot. */
  async start(): Promise<void> {
    this.#log.info({ server: this.#client.server, serviceName: this.#options.serviceName }, 'following Kubernetes resources');
    for (const reflector of this.#kinds.values()) reflector.start();
    this.#slices?.start();
    // Secrets start once Upstreams have listed, so their first list already knows which to keep.
  }

  /** Resolves when the first snapshot has been applied. */
  synced(): Promise<void> {
    if (this.status.loadedAt) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  /** Lists every collection again and resolves once the result has been applied. */
  async reload(): Promise<void> {
    const started = this.#reflectors().filter((r) => r.synced);
    const listed = started.map((r) => r.nextList());
    for (const reflector of started) reflector.relist();
    await Promise.all(listed);
    this.#rebuild();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await Promise.all(this.#reflectors().map((r) => r.stop()));
  }

  #reflector(collection: Collection, transform: (o: KubeObject) => KubeObject, onChange: () => void): Reflector {
    const { relistIntervalMs, backoff } = this.#options;
    return new Reflector({ ...collection, watch: this.#client.watch, log: this.#log, relistIntervalMs, backoff, transform, onChange });
  }

  #reflectors(): Reflector[] {
    return [...this.#kinds.values(), ...(this.#secrets ? [this.#secrets] : []), ...(this.#slices ? [this.#slices] : [])];
  }

  #onResourceChange(kind: Kind): void {
    if (kind === 'Upstream') {
      const upstreams = this.#kinds.get('Upstream')!;
      if (this.#secrets && this.#secretIndex.reference(referencedSecrets(upstreams.objects.values()))) this.#secrets.relist();
      if (!this.#stopped) this.#secrets?.start();
    }
    this.#schedule();
  }

  /** Secrets and EndpointSlices do not shape the snapshot, but their first list gates it. */
  #scheduleUntilServing(): void {
    if (!this.status.loadedAt) this.#schedule();
  }

  #countReplicas(): void {
    const before = this.#liveReplicas.current();
    this.#liveReplicas.set(countReadyEndpoints(this.#slices!.objects.values() as Iterable<EndpointSliceLike>));
    if (this.#liveReplicas.current() !== before) this.#log.info({ replicas: this.#liveReplicas.current() }, 'live replica count changed');
    this.#scheduleUntilServing();
  }

  #schedule(): void {
    if (this.#stopped) return;
    const { debounceMs } = this.#options;
    const now = Date.now();
    this.#firstPendingAt ??= now;
    if (this.#timer) clearTimeout(this.#timer);
    const wait = Math.max(0, Math.min(debounceMs, this.#firstPendingAt + debounceMs * 10 - now));
    this.#timer = setTimeout(() => this.#rebuild(), wait);
  }

  #rebuild(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#firstPendingAt = null;
    if (this.#stopped) return;
    this.status.waitingFor = this.#reflectors().filter((r) => !r.synced).map((r) => r.kind);
    if (this.status.waitingFor.length > 0) return;
    const objects = new Map<Kind, Iterable<KubeObject>>([...this.#kinds].map(([kind, reflector]) => [kind, reflector.objects.values()]));
    const { resources, refusals } = this.#admission.admit(objects);
    this.status.lastError = refusals.length > 0 ? refusals : null;
    this.lastSyncAt = Date.now();
    // Status-only writes (the operator's conditions) and relists that found nothing new change no
    // spec: skip the rebuild rather than log a new generation for nothing.
    const fingerprint = JSON.stringify(resources.map((r) => [r.kind, r.metadata.name, r.metadata.creationTimestamp, r.spec]));
    if (fingerprint === this.#appliedFingerprint) return;
    const snapshot = applyResources(this.#store, resources, this.#log, {}, this.#reportedWarnings);
    this.#appliedFingerprint = fingerprint;
    this.#reportedWarnings = new Set(snapshot.warnings);
    this.status.loadedAt = new Date().toISOString();
    for (const resolve of this.#syncWaiters.splice(0)) resolve();
  }
}

/** managedFields is bookkeeping for server-side apply; it can outweigh the spec several times. */
function withoutManagedFields(object: KubeObject): KubeObject {
  if (!object.metadata || !('managedFields' in object.metadata)) return object;
  const { managedFields: _, ...metadata } = object.metadata as Record<string, unknown>;
  return { ...object, metadata };
}

/** Only what the replica count reads. */
function endpointsOnly(slice: KubeObject & EndpointSliceLike): KubeObject {
  const endpoints = (slice.endpoints ?? []).map(({ addresses, conditions, targetRef }) => ({ addresses, conditions: { ready: conditions?.ready }, targetRef: targetRef && { uid: targetRef.uid, name: targetRef.name } }));
  return { metadata: { name: slice.metadata?.name, resourceVersion: slice.metadata?.resourceVersion }, endpoints };
}
