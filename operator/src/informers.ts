// What the operator knows of its namespace: the five tollgate.dev kinds, Secrets and the gateway
// Service's EndpointSlices, each followed by the reflector the gateway uses (@tollgate/kube). Every
// object that changes is reported by key (`Kind/name`) so the controller can queue it and whatever
// references it. Secrets keep their data only when an Upstream references them (probe credentials);
// key Secrets the operator issued are reduced to their metadata, so issued keys never sit in memory.
import { KINDS, type Kind } from '@tollgate/crds';
import { Reflector, type Collection, type KubeClient, type KubeObject } from '@tollgate/kube';
import type { Logger } from 'pino';

export type ObjectKey = string;
export const keyOf = (kind: string, name: string): ObjectKey => `${kind}/${name}`;
export function splitKey(key: ObjectKey): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}

export interface Meta {
  name: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }>;
  labels?: Record<string, string>;
  deletionTimestamp?: string;
}

export interface Obj extends KubeObject {
  metadata: Meta;
  spec?: any;
  status?: any;
  data?: Record<string, string>;
  endpoints?: any[];
  ports?: any[];
}

export interface InformerOptions {
  relistIntervalMs: number;
  /** The gateway's Service: its EndpointSlices are where usage is read from. */
  gatewayService: string;
  backoff?: { initialMs: number; maxMs: number };
}

export class Informers {
  #kinds = new Map<Kind, Reflector>();
  #secrets: Reflector;
  #slices: Reflector;
  #referencedSecrets = new Set<string>();
  #listeners: Array<(key: ObjectKey) => void> = [];

  constructor(client: KubeClient, log: Logger, options: InformerOptions) {
    const make = (collection: Collection, kind: string, transform?: (o: KubeObject) => KubeObject) =>
      new Reflector({
        ...collection,
        watch: client.watch,
        log,
        relistIntervalMs: options.relistIntervalMs,
        backoff: options.backoff,
        transform,
        onObject: (name) => this.#emit(keyOf(kind, name)),
        onChange: () => undefined,
      });
    for (const kind of KINDS) {
      const reflector = make(client.tollgate(kind), kind, withoutManagedFields);
      this.#kinds.set(kind, reflector);
    }
    this.#secrets = make(client.secrets(), 'Secret', (secret) => this.#keepSecret(secret as Obj));
    this.#slices = make(client.endpointSlices(options.gatewayService), 'EndpointSlice', withoutManagedFields);
  }

  onObject(listener: (key: ObjectKey) => void): void {
    this.#listeners.push(listener);
  }

  start(): void {
    for (const reflector of this.#all()) reflector.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#all().map((r) => r.stop()));
  }

  get synced(): boolean {
    return this.#all().every((r) => r.synced);
  }

  waitingFor(): string[] {
    return this.#all().filter((r) => !r.synced).map((r) => r.kind);
  }

  get(kind: Kind, name: string): Obj | undefined {
    return this.#kinds.get(kind)!.objects.get(name) as Obj | undefined;
  }

  list(kind: Kind): Obj[] {
    return [...this.#kinds.get(kind)!.objects.values()] as Obj[];
  }

  secret(name: string): Obj | undefined {
    return this.#secrets.objects.get(name) as Obj | undefined;
  }

  endpointSlices(): Obj[] {
    return [...this.#slices.objects.values()] as Obj[];
  }

  /** The current resourceVersion of any followed object, or '' when it does not exist. */
  version(key: ObjectKey): string {
    const [kind, name] = splitKey(key);
    const object = kind === 'Secret' ? this.secret(name) : (KINDS as string[]).includes(kind) ? this.get(kind as Kind, name) : undefined;
    return object?.metadata.resourceVersion ?? '';
  }

  /** Called when Upstreams change: a Secret newly referenced and held without data is fetched by a relist. */
  referenceSecrets(names: ReadonlySet<string>): void {
    let missing = false;
    for (const name of names) {
      const held = this.secret(name);
      if (held && !this.#referencedSecrets.has(name) && !held.data) missing = true;
    }
    this.#referencedSecrets = new Set(names);
    if (missing) this.#secrets.relist();
  }

  #keepSecret(secret: Obj): KubeObject {
    const { name, uid, resourceVersion, ownerReferences, labels } = secret.metadata;
    const metadata = { name, uid, resourceVersion, ownerReferences, labels };
    return this.#referencedSecrets.has(name) ? { metadata, data: { ...(secret.data ?? {}) } } : { metadata };
  }

  #emit(key: ObjectKey): void {
    for (const listener of this.#listeners) listener(key);
  }

  #all(): Reflector[] {
    return [...this.#kinds.values(), this.#secrets, this.#slices];
  }
}

function withoutManagedFields(object: KubeObject): KubeObject {
  if (!object.metadata || !('managedFields' in object.metadata)) return object;
  const { managedFields: _, ...metadata } = object.metadata as Record<string, unknown>;
  return { ...object, metadata };
}
