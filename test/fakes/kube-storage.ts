// The storage half of the fake Kubernetes API server: one global, monotonically increasing
// resourceVersion (like etcd's revision), uid and creationTimestamp on create, metadata.generation
// bumped only when something outside metadata and status changes (custom resources), the /status
// subresource, optimistic concurrency (409 on a stale resourceVersion), finalizers, and a bounded
// history of events that watches replay from. Schema validation is deliberately not modelled: the
// fake stores what it is given, like an API server whose installed CRDs are older or looser than the
// gateway's own schemas — the case the gateway's validation exists for.
import { randomBytes, randomUUID } from 'node:crypto';
import { PLURALS, type Kind } from '@tollgate/crds';
import { jsonPatch, mergePatch, type LabelSelector } from './kube-selectors.ts';

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** Custom resources: list items carry apiVersion/kind, updates need a resourceVersion, generation and /status exist. */
  custom: boolean;
}

export const RESOURCE_TYPES: readonly ResourceType[] = [
  ...Object.entries(PLURALS).map(([kind, plural]) => ({ group: 'tollgate.dev', version: 'v1alpha1', plural, kind: kind as Kind, custom: true })),
  { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', custom: false },
  { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', kind: 'EndpointSlice', custom: false },
  { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', custom: false },
];

export const apiVersionOf = (type: ResourceType) => (type.group ? `${type.group}/${type.version}` : type.version);
const qualified = (type: ResourceType) => (type.group ? `${type.plural}.${type.group}` : type.plural);

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: any;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  revision: number;
  type: EventType;
  resource: ResourceType;
  namespace: string;
  object: KubeObject;
  /** The object before this event, so a selector watch can turn a label change into ADDED/DELETED. */
  previous: KubeObject | null;
}

/** A failure the real API server answers with a Status object. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  toStatus() {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, ...(this.details ? { details: this.details } : {}), code: this.code };
  }
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** RFC 3339 to the second, as the API server writes timestamps. */
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
/** Everything that counts as "spec" for generation: the whole object minus metadata and status. */
const specPart = ({ metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest }: KubeObject) => JSON.stringify(rest);

export interface PatchRequest {
  contentType: string;
  body: unknown;
}

export class KubeStorage {
  #objects = new Map<string, KubeObject>();
  #revision = 0;
  #history: StoredEvent[] = [];
  #compactedThrough = 0;
  #historyLimit: number;
  #listeners = new Set<(event: StoredEvent) => void>();

  constructor(historyLimit = 1000) {
    this.#historyLimit = historyLimit;
  }

  get revision(): number {
    return this.#revision;
  }

  /** Watches from a resourceVersion older than this get 410 Gone: the events after it are no longer retained. */
  get compactedThrough(): number {
    return this.#compactedThrough;
  }

  /** Forgets every retained event, as etcd compaction does; open watches are unaffected. */
  compact(): void {
    this.#history = [];
    this.#compactedThrough = this.#revision;
  }

  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Events after `revision`, or 410 when some of them were compacted away. */
  eventsSince(revision: number): StoredEvent[] {
    if (revision < this.#compactedThrough) {
      throw new ApiError(410, 'Expired', `too old resource version: ${revision} (${this.#compactedThrough})`);
    }
    return this.#history.filter((event) => event.revision > revision);
  }

  list(type: ResourceType, namespace: string | undefined, selector: LabelSelector): KubeObject[] {
    const prefix = namespace === undefined ? `${qualified(type)}|` : `${qualified(type)}|${namespace}|`;
    return [...this.#objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && selector(object.metadata.labels))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, object]) => {
        // Items of a built-in list carry no apiVersion/kind (the list says it); custom resources keep theirs.
        const { apiVersion: _a, kind: _k, ...item } = structuredClone(object);
        return type.custom ? structuredClone(object) : (item as KubeObject);
      });
  }

  get(type: ResourceType, namespace: string, name: string): KubeObject {
    const object = this.#objects.get(this.#key(type, namespace, name));
    if (!object) throw this.#notFound(type, name);
    return structuredClone(object);
  }

  create(type: ResourceType, namespace: string, body: KubeObject): KubeObject {
    const object = this.#checkBody(type, namespace, structuredClone(body));
    const meta = object.metadata;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    if (!meta.name || !DNS_SUBDOMAIN.test(meta.name)) throw this.#invalid(type, meta.name ?? '', 'metadata.name', 'a lowercase RFC 1123 subdomain is required');
    const key = this.#key(type, namespace, meta.name);
    if (this.#objects.has(key)) throw new ApiError(409, 'AlreadyExists', `${qualified(type)} "${meta.name}" already exists`, this.#details(type, meta.name));
    // Status is the controllers' to write, through /status; a create cannot set it.
    if (type.custom) delete object.status;
    normaliseSecret(type, object);
    Object.assign(meta, { namespace, uid: randomUUID(), creationTimestamp: now(), resourceVersion: undefined, generation: type.custom ? 1 : undefined, deletionTimestamp: undefined });
    return this.#commit(type, namespace, 'ADDED', object, null);
  }

  /** PUT: the whole object; custom resources require metadata.resourceVersion (optimistic concurrency). */
  replace(type: ResourceType, namespace: string, name: string, body: KubeObject, subresource?: 'status'): KubeObject {
    const existing = this.#existing(type, namespace, name);
    const next = this.#checkBody(type, namespace, structuredClone(body), name);
    if (next.metadata.resourceVersion === undefined && type.custom) {
      throw this.#invalid(type, name, 'metadata.resourceVersion', 'must be specified for an update');
    }
    return this.#update(type, namespace, existing, next, subresource);
  }

  patch(type: ResourceType, namespace: string, name: string, patch: PatchRequest, subresource?: 'status'): KubeObject {
    const existing = this.#existing(type, namespace, name);
    let next: unknown;
    const mediaType = patch.contentType.split(';')[0].trim();
    try {
      if (mediaType === 'application/merge-patch+json') next = mergePatch(existing, patch.body);
      else if (mediaType === 'application/json-patch+json') next = jsonPatch(existing, patch.body as never);
      // Built-in types take strategic merge patches; for the fields tests touch it behaves as a merge patch.
      else if (mediaType === 'application/strategic-merge-patch+json' && !type.custom) next = mergePatch(existing, patch.body);
      else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json${type.custom ? '' : ', application/strategic-merge-patch+json'}`);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw this.#invalid(type, name, '(patch)', (error as Error).message);
    }
    const candidate = this.#checkBody(type, namespace, next as KubeObject, name);
    // A patch only takes a lock when it names a resourceVersion; otherwise it applies to the latest object.
    const requested = (patch.body as KubeObject | null)?.metadata?.resourceVersion;
    candidate.metadata.resourceVersion = typeof requested === 'string' ? requested : existing.metadata.resourceVersion;
    return this.#update(type, namespace, existing, candidate, subresource);
  }

  delete(type: ResourceType, namespace: string, name: string, preconditions: { resourceVersion?: string; uid?: string } = {}): KubeObject {
    const existing = this.#existing(type, namespace, name);
    this.#checkPreconditions(type, existing, preconditions);
    if (existing.metadata.finalizers?.length) {
      // Finalizers hold the object: it is only marked, and goes once the last finalizer is removed.
      if (existing.metadata.deletionTimestamp) return structuredClone(existing);
      const marked = structuredClone(existing);
      Object.assign(marked.metadata, { deletionTimestamp: now(), deletionGracePeriodSeconds: 0 });
      return this.#commit(type, namespace, 'MODIFIED', marked, existing);
    }
    return this.#commit(type, namespace, 'DELETED', structuredClone(existing), existing);
  }

  #update(type: ResourceType, namespace: string, existing: KubeObject, next: KubeObject, subresource?: 'status'): KubeObject {
    this.#checkPreconditions(type, existing, { resourceVersion: next.metadata.resourceVersion });
    let result: KubeObject;
    if (subresource === 'status') {
      // /status changes the status stanza and nothing else.
      result = { ...structuredClone(existing), status: next.status };
      if (next.status === undefined) delete result.status;
    } else {
      result = next;
      // The main resource ignores status changes when a /status subresource exists.
      if (type.custom) {
        if (existing.status === undefined) delete result.status;
        else result.status = structuredClone(existing.status);
      }
      normaliseSecret(type, result);
      const { uid, creationTimestamp, generation, deletionTimestamp } = existing.metadata;
      Object.assign(result.metadata, { name: existing.metadata.name, namespace, uid, creationTimestamp, generation, deletionTimestamp });
      if (!result.metadata.deletionTimestamp) delete result.metadata.deletionTimestamp;
    }
    result.metadata.resourceVersion = existing.metadata.resourceVersion;
    // A write that changes nothing is a no-op: no new resourceVersion, no event.
    if (JSON.stringify(result) === JSON.stringify(existing)) return structuredClone(existing);
    if (type.custom && specPart(result) !== specPart(existing)) result.metadata.generation = (existing.metadata.generation ?? 0) + 1;
    if (result.metadata.deletionTimestamp && !result.metadata.finalizers?.length) {
      return this.#commit(type, namespace, 'DELETED', result, existing);
    }
    return this.#commit(type, namespace, 'MODIFIED', result, existing);
  }

  #commit(type: ResourceType, namespace: string, eventType: EventType, object: KubeObject, previous: KubeObject | null): KubeObject {
    const revision = ++this.#revision;
    // The DELETED event carries the revision of the deletion, as etcd reports it.
    object.metadata.resourceVersion = String(revision);
    Object.assign(object, { apiVersion: apiVersionOf(type), kind: type.kind });
    const key = this.#key(type, namespace, object.metadata.name!);
    if (eventType === 'DELETED') this.#objects.delete(key);
    else this.#objects.set(key, object);
    const event: StoredEvent = { revision, type: eventType, resource: type, namespace, object: structuredClone(object), previous };
    this.#history.push(event);
    while (this.#history.length > this.#historyLimit) this.#compactedThrough = this.#history.shift()!.revision;
    for (const listener of this.#listeners) listener(event);
    return structuredClone(object);
  }

  #checkBody(type: ResourceType, namespace: string, body: KubeObject, name?: string): KubeObject {
    if (!body || typeof body !== 'object' || !body.metadata || typeof body.metadata !== 'object') {
      throw new ApiError(400, 'BadRequest', 'the object has no metadata');
    }
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(type)) throw new ApiError(400, 'BadRequest', `the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersionOf(type)})`);
    if (body.kind !== undefined && body.kind !== type.kind) throw new ApiError(400, 'BadRequest', `the kind in the data (${body.kind}) does not match the expected kind (${type.kind})`);
    if (body.metadata.namespace !== undefined && body.metadata.namespace !== namespace) {
      throw new ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    if (name !== undefined && body.metadata.name !== undefined && body.metadata.name !== name) {
      throw new ApiError(400, 'BadRequest', `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
    }
    body.metadata.name ??= name;
    return body;
  }

  #checkPreconditions(type: ResourceType, existing: KubeObject, { resourceVersion, uid }: { resourceVersion?: string; uid?: string }): void {
    const name = existing.metadata.name!;
    if (uid !== undefined && uid !== existing.metadata.uid) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(type)} "${name}": Precondition failed: UID in precondition: ${uid}, UID in object meta: ${existing.metadata.uid}`, this.#details(type, name));
    }
    if (resourceVersion !== undefined && resourceVersion !== existing.metadata.resourceVersion) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(type)} "${name}": the object has been modified; please apply your changes to the latest version and try again`, this.#details(type, name));
    }
  }

  #existing(type: ResourceType, namespace: string, name: string): KubeObject {
    const existing = this.#objects.get(this.#key(type, namespace, name));
    if (!existing) throw this.#notFound(type, name);
    return existing;
  }

  #key(type: ResourceType, namespace: string, name: string): string {
    return `${qualified(type)}|${namespace}|${name}`;
  }

  #details(type: ResourceType, name: string) {
    return { name, ...(type.group ? { group: type.group } : {}), kind: type.plural };
  }

  #notFound(type: ResourceType, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${qualified(type)} "${name}" not found`, this.#details(type, name));
  }

  #invalid(type: ResourceType, name: string, field: string, message: string): ApiError {
    return new ApiError(422, 'Invalid', `${type.kind}.${type.group} "${name}" is invalid: ${field}: ${message}`, { ...this.#details(type, name), causes: [{ reason: 'FieldValueInvalid', message, field }] });
  }
}

/** Secret.stringData is write-only convenience: merged into data (base64) and never stored. */
function normaliseSecret(type: ResourceType, object: KubeObject): void {
  if (type.kind !== 'Secret' || !object.stringData) return;
  const data: Record<string, string> = { ...(object.data ?? {}) };
  for (const [key, value] of Object.entries(object.stringData as Record<string, string>)) data[key] = Buffer.from(value, 'utf8').toString('base64');
  object.data = data;
  delete object.stringData;
}
