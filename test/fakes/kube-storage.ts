// The storage half of the fake Kubernetes API server: one global, monotonically increasing
// resourceVersion (like etcd's revision), uid and creationTimestamp on create, metadata.generation
// bumped only when something outside metadata and status changes (custom resources), namespaced and
// cluster-scoped objects (the latter under the namespace "" and without one in metadata), the /status
// subresource, optimistic concurrency (409 on a stale resourceVersion), finalizers, garbage
// collection of dependents through ownerReferences, CRD admission (defaults, pruning, validation:
// kube-schema.ts), managedFields and server-side apply (kube-fields.ts), dry runs, and a bounded
// history of events that watches replay from.
import { randomBytes, randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { apply, conflictMessage, recordUpdate } from './kube-fields.ts';
import { admission } from './kube-admission.ts';
import { KindRegistry } from './kube-kinds.ts';
import { apiVersionOf, BUILTIN_TYPES, qualified, type ResourceType } from './kube-resources.ts';
import type { Cause } from './kube-schema.ts';
import { jsonPatch, mergePatch, type ObjectSelector } from './kube-selectors.ts';
import { ApiError, type DeleteOptions, type EventType, type KubeObject, type PatchRequest, type StoredEvent, type WriteOptions } from './kube-types.ts';

export { apiVersionOf, type ResourceType } from './kube-resources.ts';
export { ApiError, type DeleteOptions, type EventType, type KubeObject, type ObjectMeta, type PatchRequest, type StoredEvent, type WriteOptions } from './kube-types.ts';

/** RFC 3339 to the second, as the API server writes timestamps. */
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
/** Everything that counts as "spec" for generation: the whole object minus metadata and status. */
const specPart = ({ metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest }: KubeObject) => JSON.stringify(rest);

export class KubeStorage {
  /** Off: CRD schemas are not applied (no defaults, pruning or validation), like an API server whose
   *  installed CRDs are older or looser than the gateway's own schemas — the case its validation is for. */
  schemaValidation = true;
  #objects = new Map<string, KubeObject>();
  #revision = 0;
  #history: StoredEvent[] = [];
  #compactedThrough = 0;
  #historyLimit: number;
  #listeners = new Set<(event: StoredEvent) => void>();
  /** The kinds served now; CustomResourceDefinitions add and remove theirs (kube-crds.ts). */
  readonly kinds: KindRegistry;

  constructor(historyLimit = 1000, builtin: readonly ResourceType[] = BUILTIN_TYPES) {
    this.#historyLimit = historyLimit;
    this.kinds = new KindRegistry(builtin);
  }

  get types(): readonly ResourceType[] {
    return this.kinds.types;
  }

  get revision(): number {
    return this.#revision;
  }

  /** Watches from a resourceVersion older than this get 410 Gone: the events after it are no longer retained. */
  get compactedThrough(): number {
    return this.#compactedThrough;
  }

  typeOf(apiVersion: string | undefined, kind: string | undefined): ResourceType {
    const type = this.types.find((t) => apiVersionOf(t) === apiVersion && t.kind === kind);
    if (!type) throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${apiVersion} ${kind})`);
    return type;
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

  /** Objects in name order (namespace, then name), as etcd's key order gives them. */
  list(type: ResourceType, namespace: string | undefined, selector: ObjectSelector = () => true): KubeObject[] {
    const prefix = namespace === undefined ? `${qualified(type)}|` : `${qualified(type)}|${namespace}|`;
    return [...this.#objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && selector(object))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
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

  create(type: ResourceType, namespace: string, body: KubeObject, options: WriteOptions = {}): KubeObject {
    const object = this.#checkBody(type, namespace, structuredClone(body));
    const meta = object.metadata;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomBytes(4).toString('hex').slice(0, 5)}`;
    if (!meta.name) throw this.#invalid(type, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
    const key = this.#key(type, namespace, meta.name);
    if (type.terminating) throw new ApiError(405, 'MethodNotAllowed', `create not allowed while custom resource definition is terminating`);
    if (this.#objects.has(key)) throw new ApiError(409, 'AlreadyExists', `${qualified(type)} "${meta.name}" already exists`, this.#details(type, meta.name));
    // Status is the controllers' to write, through /status; a create cannot set it.
    if (type.statusSubresource) delete object.status;
    normaliseSecret(type, object);
    Object.assign(meta, { namespace, uid: randomUUID(), creationTimestamp: now(), resourceVersion: undefined, generation: type.custom ? 1 : undefined, deletionTimestamp: undefined });
    if (meta.generation === undefined) delete meta.generation;
    if (!type.namespaced) delete meta.namespace;
    this.#admit(type, object, null, undefined, options);
    if (!options.managedFieldsSet) meta.managedFields = recordUpdate([], null, object, options.fieldManager ?? 'unknown', apiVersionOf(type));
    if (options.dryRun) return { ...structuredClone(object), apiVersion: apiVersionOf(type), kind: type.kind };
    return this.#commit(type, namespace, 'ADDED', object, null);
  }

  /** PUT: the whole object; custom resources require metadata.resourceVersion (optimistic concurrency). */
  replace(type: ResourceType, namespace: string, name: string, body: KubeObject, subresource?: 'status', options: WriteOptions = {}): KubeObject {
    const existing = this.#existing(type, namespace, name);
    const next = this.#checkBody(type, namespace, structuredClone(body), name);
    if (next.metadata.resourceVersion === undefined && type.custom) {
      throw this.#invalid(type, name, [{ reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0x0: must be specified for an update' }]);
    }
    return this.#update(type, namespace, existing, next, subresource, options);
  }

  patch(type: ResourceType, namespace: string, name: string, patch: PatchRequest, subresource?: 'status', options: WriteOptions = {}): KubeObject {
    const mediaType = patch.contentType.split(';')[0].trim();
    if (mediaType === 'application/apply-patch+yaml') return this.#serverSideApply(type, namespace, name, patch.body, subresource, options);
    const existing = this.#existing(type, namespace, name);
    let next: unknown;
    try {
      if (mediaType === 'application/merge-patch+json') next = mergePatch(existing, patch.body);
      else if (mediaType === 'application/json-patch+json') next = jsonPatch(existing, patch.body as never);
      // Built-in types take strategic merge patches; for the fields tests touch it behaves as a merge patch.
      else if (mediaType === 'application/strategic-merge-patch+json' && !type.custom) next = mergePatch(existing, patch.body);
      else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${type.custom ? '' : ', application/strategic-merge-patch+json'}`);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw this.#invalid(type, name, [{ reason: 'FieldValueInvalid', field: '(patch)', message: (error as Error).message }]);
    }
    const candidate = this.#checkBody(type, namespace, next as KubeObject, name);
    // A patch only takes a lock when it names a resourceVersion; otherwise it applies to the latest object.
    const requested = (patch.body as KubeObject | null)?.metadata?.resourceVersion;
    candidate.metadata.resourceVersion = typeof requested === 'string' ? requested : existing.metadata.resourceVersion;
    return this.#update(type, namespace, existing, candidate, subresource, options);
  }

  delete(type: ResourceType, namespace: string, name: string, options: DeleteOptions = {}): KubeObject {
    const existing = this.#existing(type, namespace, name);
    this.#checkPreconditions(type, existing, options.preconditions ?? {});
    if (options.dryRun) return structuredClone(existing);
    const policy = options.propagationPolicy ?? 'Background';
    if (policy === 'Orphan') this.#orphanDependents(existing);
    if (policy === 'Foreground') {
      // The owner waits (finalizer foregroundDeletion) until its dependents are gone, then goes itself.
      const marked = structuredClone(existing);
      marked.metadata.finalizers = [...new Set([...(marked.metadata.finalizers ?? []), 'foregroundDeletion'])];
      marked.metadata.deletionTimestamp ??= now();
      marked.metadata.deletionGracePeriodSeconds = 0;
      this.#commit(type, namespace, 'MODIFIED', marked, existing);
      this.#collectDependents(existing.metadata.uid!);
      const current = this.#objects.get(this.#key(type, namespace, name))!;
      const released = structuredClone(current);
      released.metadata.finalizers = released.metadata.finalizers!.filter((f) => f !== 'foregroundDeletion');
      return this.#commit(type, namespace, released.metadata.finalizers.length === 0 ? 'DELETED' : 'MODIFIED', released, current);
    }
    if (existing.metadata.finalizers?.length) {
      // Finalizers hold the object: it is only marked, and goes once the last finalizer is removed.
      if (existing.metadata.deletionTimestamp) return structuredClone(existing);
      const marked = structuredClone(existing);
      Object.assign(marked.metadata, { deletionTimestamp: now(), deletionGracePeriodSeconds: 0 });
      return this.#commit(type, namespace, 'MODIFIED', marked, existing);
    }
    return this.#commit(type, namespace, 'DELETED', structuredClone(existing), existing);
  }

  #serverSideApply(type: ResourceType, namespace: string, name: string, body: unknown, subresource: 'status' | undefined, options: WriteOptions): KubeObject {
    let config: KubeObject;
    try {
      config = (typeof body === 'string' ? parseYaml(body) : body) as KubeObject;
    } catch (error) {
      throw new ApiError(400, 'BadRequest', `error decoding YAML: ${(error as Error).message}`);
    }
    if (!options.fieldManager) throw this.#invalid(type, name, [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }]);
    config = this.#checkBody(type, namespace, config, name);
    if (config.apiVersion === undefined || config.kind === undefined) throw new ApiError(400, 'BadRequest', 'apiVersion and kind must be set in an apply configuration');
    const existing = this.#objects.get(this.#key(type, namespace, name)) ?? null;
    const { object, conflicts } = apply(existing, config, options.fieldManager, options.force === true, apiVersionOf(type), subresource);
    if (conflicts.length > 0) {
      const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}" using ${apiVersionOf(type)}`, field: `.${c.path.join('.')}` }));
      throw new ApiError(409, 'Conflict', conflictMessage(conflicts, apiVersionOf(type)), { ...this.#details(type, name), causes });
    }
    if (!existing) return this.create(type, namespace, object as KubeObject, { ...options, managedFieldsSet: true });
    (object as KubeObject).metadata.resourceVersion = existing.metadata.resourceVersion;
    return this.#update(type, namespace, existing, object as KubeObject, subresource, { ...options, managedFieldsSet: true });
  }

  #update(type: ResourceType, namespace: string, existing: KubeObject, next: KubeObject, subresource: 'status' | undefined, options: WriteOptions): KubeObject {
    this.#checkPreconditions(type, existing, { resourceVersion: next.metadata.resourceVersion });
    let result: KubeObject;
    if (subresource === 'status') {
      // /status changes the status stanza (and managedFields) and nothing else.
      result = { ...structuredClone(existing), status: next.status };
      if (next.status === undefined) delete result.status;
      if (options.managedFieldsSet) result.metadata.managedFields = next.metadata.managedFields;
    } else {
      result = next;
      // The main resource ignores status changes when a /status subresource exists.
      if (type.statusSubresource) {
        if (existing.status === undefined) delete result.status;
        else result.status = structuredClone(existing.status);
      }
      normaliseSecret(type, result);
      const { uid, creationTimestamp, generation, deletionTimestamp } = existing.metadata;
      Object.assign(result.metadata, { name: existing.metadata.name, namespace, uid, creationTimestamp, generation, deletionTimestamp });
      if (!result.metadata.deletionTimestamp) delete result.metadata.deletionTimestamp;
      if (!type.namespaced) delete result.metadata.namespace;
      if (result.metadata.generation === undefined) delete result.metadata.generation;
      // Once deletion has begun, finalizers may only be removed, never added.
      if (existing.metadata.deletionTimestamp && (result.metadata.finalizers ?? []).some((f) => !(existing.metadata.finalizers ?? []).includes(f))) {
        throw new ApiError(422, 'Invalid', `${type.kind}.${type.group} "${existing.metadata.name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted`);
      }
    }
    this.#admit(type, result, existing, subresource, options);
    if (!options.managedFieldsSet) {
      result.metadata.managedFields = recordUpdate(existing.metadata.managedFields ?? [], existing, result, options.fieldManager ?? 'unknown', apiVersionOf(type), subresource);
    }
    if (!result.metadata.managedFields?.length) delete result.metadata.managedFields;
    result.metadata.resourceVersion = existing.metadata.resourceVersion;
    // A write that changes nothing is a no-op: no new resourceVersion, no event.
    // (managedFields count, their timestamps do not: a new manager applying the same values is recorded.)
    const timeless = (object: KubeObject) => JSON.stringify({ ...object, metadata: { ...object.metadata, managedFields: object.metadata.managedFields?.map(({ time: _t, ...entry }) => entry) } });
    if (timeless(result) === timeless(existing)) return structuredClone(existing);
    if (type.custom && specPart(result) !== specPart(existing)) result.metadata.generation = (existing.metadata.generation ?? 0) + 1;
    if (options.dryRun) return { ...structuredClone(result), apiVersion: apiVersionOf(type), kind: type.kind };
    if (result.metadata.deletionTimestamp && !result.metadata.finalizers?.length) {
      return this.#commit(type, namespace, 'DELETED', result, existing);
    }
    return this.#commit(type, namespace, 'MODIFIED', result, existing);
  }

  /** CRD admission (kube-admission.ts); a refusal is 422 Invalid (or 400 for strict unknown fields). */
  #admit(type: ResourceType, object: KubeObject, old: KubeObject | null, subresource: 'status' | undefined, options: WriteOptions): void {
    const causes = admission(type, object, old, subresource, options, this.schemaValidation);
    if (causes.length > 0) throw this.#invalid(type, object.metadata.name ?? '', causes);
  }

  /** Background garbage collection: every object owned by `uid` is deleted (its own dependents in turn). */
  #collectDependents(uid: string): void {
    for (const [key, object] of [...this.#objects.entries()]) {
      if (!object.metadata.ownerReferences?.some((ref) => ref.uid === uid)) continue;
      const type = this.types.find((t) => key.startsWith(`${qualified(t)}|`) && apiVersionOf(t) === object.apiVersion && t.kind === object.kind);
      if (!type) continue;
      const remaining = object.metadata.ownerReferences.filter((ref) => ref.uid !== uid && this.#uidExists(ref.uid));
      try {
        if (remaining.length > 0) {
          // Still owned by someone alive: only the dead owner's reference goes.
          const updated = structuredClone(object);
          updated.metadata.ownerReferences = remaining;
          this.#commit(type, object.metadata.namespace ?? '', 'MODIFIED', updated, object);
        } else this.delete(type, object.metadata.namespace ?? '', object.metadata.name!);
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 404)) throw error;
      }
    }
  }

  #orphanDependents(owner: KubeObject): void {
    for (const [key, object] of [...this.#objects.entries()]) {
      if (!object.metadata.ownerReferences?.some((ref) => ref.uid === owner.metadata.uid)) continue;
      const type = this.types.find((t) => key.startsWith(`${qualified(t)}|`) && apiVersionOf(t) === object.apiVersion && t.kind === object.kind)!;
      const updated = structuredClone(object);
      updated.metadata.ownerReferences = object.metadata.ownerReferences.filter((ref) => ref.uid !== owner.metadata.uid);
      if (updated.metadata.ownerReferences.length === 0) delete updated.metadata.ownerReferences;
      this.#commit(type, object.metadata.namespace ?? '', 'MODIFIED', updated, object);
    }
  }

  #uidExists(uid: string): boolean {
    for (const object of this.#objects.values()) if (object.metadata.uid === uid) return true;
    return false;
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
    if (eventType === 'DELETED' && object.metadata.uid) this.#collectDependents(object.metadata.uid);
    return structuredClone(object);
  }

  #checkBody(type: ResourceType, namespace: string, body: KubeObject, name?: string): KubeObject {
    if (!body || typeof body !== 'object' || !body.metadata || typeof body.metadata !== 'object') {
      throw new ApiError(400, 'BadRequest', 'the object has no metadata');
    }
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(type)) throw new ApiError(400, 'BadRequest', `the API version in the data (${body.apiVersion}) does not match the expected API version (${apiVersionOf(type)})`);
    if (body.kind !== undefined && body.kind !== type.kind) throw new ApiError(400, 'BadRequest', `the kind in the data (${body.kind}) does not match the expected kind (${type.kind})`);
    // A cluster-scoped object has no namespace: the API server drops one that was sent.
    if (!type.namespaced) delete body.metadata.namespace;
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

  /** 422 Invalid, worded as kube-apiserver words it: `Kind.group "name" is invalid: field: message`. */
  #invalid(type: ResourceType, name: string, causes: Cause[]): ApiError {
    const lines = causes.map((c) => `${c.field}: ${c.message}`);
    const summary = lines.length === 1 ? lines[0] : `[${lines.join(', ')}]`;
    const kind = type.group ? `${type.kind}.${type.group}` : type.kind;
    return new ApiError(422, 'Invalid', `${kind} "${name}" is invalid: ${summary}`, { ...this.#details(type, name), kind: type.kind, causes });
  }
}

/** Secret.type defaults to Opaque; stringData is write-only convenience: merged into data (base64) and never stored. */
function normaliseSecret(type: ResourceType, object: KubeObject): void {
  if (type.kind !== 'Secret') return;
  object.type ??= 'Opaque';
  if (!object.stringData) return;
  const data: Record<string, string> = { ...(object.data ?? {}) };
  for (const [key, value] of Object.entries(object.stringData as Record<string, string>)) data[key] = Buffer.from(value, 'utf8').toString('base64');
  object.data = data;
  delete object.stringData;
}
