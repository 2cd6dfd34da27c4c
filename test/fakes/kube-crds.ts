// CustomResourceDefinitions in the fake Kubernetes API server, as apiextensions-apiserver serves them:
// the apiextensions.k8s.io/v1 kind itself (cluster-scoped, a /status subresource, its schema in
// kube-crd-schema.ts and the rules a schema cannot say), and the controller that acts on them. Like
// the real controllers it works after the write, not inside it: it checks the names against the other
// CRDs of the group (NamesAccepted), registers the kinds in storage, so discovery, OpenAPI and
// admission know them (Established), and on deletion (the customresourcecleanup finalizer) deletes
// every custom resource of the CRD before letting it go and unregistering its kinds.
import { CRD_SCHEMA } from './kube-crd-schema.ts';
import { typesFromCrd, type JsonSchema, type ResourceType } from './kube-resources.ts';
import type { KubeStorage } from './kube-storage.ts';
import { ApiError, type KubeObject, type StoredEvent } from './kube-types.ts';

export const CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';
const GROUP_OF_NAMES = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

type Cause = ReturnType<NonNullable<ResourceType['validate']>>[number];

/** What apiextensions' validation checks beyond the schema, with its field paths and wording. */
export function validateCrd(crd: Record<string, any>, old: Record<string, any> | null): Cause[] {
  const causes: Cause[] = [];
  const spec = crd.spec ?? {};
  const invalid = (field: string, value: unknown, detail: string) => causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${detail}` });
  if (typeof spec.group === 'string' && !GROUP_OF_NAMES.test(spec.group)) invalid('spec.group', spec.group, 'should be a domain with at least one dot');
  const plural = spec.names?.plural;
  if (typeof plural === 'string' && !DNS_LABEL.test(plural)) invalid('spec.names.plural', plural, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character");
  if (crd.metadata?.name !== `${plural}.${spec.group}`) invalid('metadata.name', crd.metadata?.name, 'must be spec.names.plural+"."+spec.group');
  const versions: JsonSchema[] = Array.isArray(spec.versions) ? spec.versions : [];
  if (versions.length === 0) causes.push({ reason: 'FieldValueRequired', field: 'spec.versions', message: 'Required value: must have exactly one version marked as storage version' });
  else if (versions.filter((v) => v.storage === true).length !== 1) invalid('spec.versions', versions.map((v) => v.name), 'must have exactly one version marked as storage version');
  const seen = new Set<string>();
  versions.forEach((version, i) => {
    if (seen.has(version.name)) invalid(`spec.versions[${i}].name`, version.name, 'must be unique');
    seen.add(version.name);
    const schema = version.schema?.openAPIV3Schema;
    if (schema === undefined) causes.push({ reason: 'FieldValueRequired', field: `spec.versions[${i}].schema.openAPIV3Schema`, message: 'Required value: schemas are required' });
    else if (schema.type !== 'object') causes.push({ reason: 'FieldValueRequired', field: `spec.versions[${i}].schema.openAPIV3Schema.type`, message: 'Required value: must be object at the root' });
  });
  if (old) {
    if (old.spec?.group !== spec.group) invalid('spec.group', spec.group, 'field is immutable');
    if (old.spec?.scope !== spec.scope) invalid('spec.scope', spec.scope, 'field is immutable');
  }
  return causes;
}

export const CRD_TYPE: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  singular: 'customresourcedefinition',
  kind: 'CustomResourceDefinition',
  shortNames: ['crd', 'crds'],
  categories: ['api-extensions'],
  namespaced: false,
  custom: false,
  statusSubresource: true,
  schema: CRD_SCHEMA,
  // kube-apiserver's default table: the creation time as a timestamp, not an age.
  columns: [{ name: 'Created At', type: 'date', jsonPath: '', compute: (crd) => crd.metadata?.creationTimestamp ?? null }],
  validate: validateCrd,
};

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

/** The same condition keeps its lastTransitionTime while its status does not change. */
function withConditions(current: Condition[] | undefined, wanted: Condition[]): Condition[] {
  const kept = (current ?? []).filter((c) => !wanted.some((w) => w.type === c.type));
  return [
    ...kept,
    ...wanted.map((w) => {
      const before = current?.find((c) => c.type === w.type);
      return { ...w, lastTransitionTime: before && before.status === w.status ? before.lastTransitionTime : now() };
    }),
  ];
}

export class CrdController {
  #storage: KubeStorage;
  #pending = new Set<string>();
  #onRemoved: (types: ResourceType[]) => void;

  /** `onRemoved` hears of kinds no longer served (the server ends their watches). */
  constructor(storage: KubeStorage, onRemoved: (types: ResourceType[]) => void) {
    this.#storage = storage;
    this.#onRemoved = onRemoved;
    storage.subscribe((event) => this.#observe(event));
  }

  /** Installs a CRD at once, established, as if a cluster had it before anyone looked (the preload). */
  install(crd: JsonSchema): void {
    this.#storage.create(CRD_TYPE, '', structuredClone(crd) as KubeObject, { fieldManager: 'fake-apiserver-preload' });
    this.reconcile(crd.metadata.name);
  }

  #observe(event: StoredEvent): void {
    // A custom resource of a terminating CRD went (or lost a finalizer): its CRD looks again.
    if (event.resource.terminating) return this.#schedule(this.#storage.kinds.definerOf(event.resource));
    if (event.resource !== CRD_TYPE) return;
    const name = event.object.metadata.name!;
    if (event.type === 'DELETED') {
      this.#onRemoved(this.#storage.kinds.undefine(name));
      // Names it held are free: a CRD of the group refused for a conflict may now be accepted.
      for (const other of this.#storage.list(CRD_TYPE, '')) if (other.spec?.group === event.object.spec?.group) this.#schedule(other.metadata.name);
      return;
    }
    this.#schedule(name);
  }

  /** Work after the write that caused it, as a controller does; several writes make one pass. */
  #schedule(name: string | undefined): void {
    if (name === undefined || this.#pending.has(name)) return;
    this.#pending.add(name);
    setImmediate(() => {
      this.#pending.delete(name);
      // A controller's failure is its own: it must not take the API server down with it.
      try {
        this.reconcile(name);
      } catch (error) {
        process.stderr.write(`fake API server: reconciling CustomResourceDefinition ${name} failed: ${(error as Error).message}\n`);
      }
    });
  }

  /** Brings one CRD's finalizer, conditions and served kinds in line with its spec. */
  reconcile(name: string): void {
    let crd: KubeObject;
    try {
      crd = this.#storage.get(CRD_TYPE, '', name);
    } catch (error) {
      if (error instanceof ApiError && error.code === 404) return;
      throw error;
    }
    if (crd.metadata.deletionTimestamp) return this.#cleanUp(crd);
    if (!crd.metadata.finalizers?.includes(CLEANUP_FINALIZER)) {
      crd.metadata.finalizers = [...(crd.metadata.finalizers ?? []), CLEANUP_FINALIZER];
      crd = this.#storage.replace(CRD_TYPE, '', name, crd, undefined, { fieldManager: 'kube-apiserver' });
    }
    const names = this.#acceptedNames(crd);
    const conflict = this.#conflict(crd, names);
    if (!conflict) this.#onRemoved(this.#storage.kinds.define(name, typesFromCrd(crd)));
    const storage = (crd.spec.versions as JsonSchema[]).find((v) => v.storage)?.name;
    const status = {
      ...crd.status,
      conditions: withConditions(crd.status?.conditions, conflict
        ? [
            { type: 'NamesAccepted', status: 'False', reason: conflict.reason, message: conflict.message },
            { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' },
          ]
        : [
            { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' },
            { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
          ]),
      acceptedNames: conflict ? (crd.status?.acceptedNames ?? { plural: '', kind: '' }) : names,
      storedVersions: [...new Set([...(crd.status?.storedVersions ?? []), ...(storage ? [storage] : [])])],
    };
    if (JSON.stringify(status) !== JSON.stringify(crd.status)) this.#storage.replace(CRD_TYPE, '', name, { ...crd, status }, 'status', { fieldManager: 'kube-apiserver' });
  }

  #acceptedNames(crd: KubeObject): JsonSchema {
    const names = crd.spec.names;
    return { ...names, singular: names.singular ?? String(names.kind).toLowerCase(), listKind: names.listKind ?? `${names.kind}List` };
  }

  /** Another CRD of the same group already serving this plural, kind or short name. */
  #conflict(crd: KubeObject, names: JsonSchema): { reason: string; message: string } | null {
    for (const other of this.#storage.list(CRD_TYPE, '')) {
      if (other.metadata.name === crd.metadata.name || other.spec?.group !== crd.spec.group) continue;
      const taken = other.status?.acceptedNames;
      if (!taken) continue;
      if (taken.plural === names.plural || taken.singular === names.plural) return { reason: 'PluralConflict', message: `"${names.plural}" is already in use` };
      if (taken.kind === names.kind) return { reason: 'KindConflict', message: `"${names.kind}" is already in use` };
      const short = (names.shortNames ?? []).find((s: string) => (taken.shortNames ?? []).includes(s));
      if (short) return { reason: 'ShortNamesConflict', message: `"${short}" is already in use` };
    }
    return null;
  }

  /** Deletion: Terminating, every custom resource of the CRD deleted; the finalizer goes once none is
   *  left (one held by its own finalizers keeps the CRD terminating, as in a cluster). */
  #cleanUp(crd: KubeObject): void {
    const name = crd.metadata.name!;
    const types = this.#storage.kinds.definedBy(name);
    for (const type of types) type.terminating = true;
    // The objects of every version share one key space: listing and deleting through one type reaches them all.
    const remaining = () => (types[0] ? this.#storage.list(types[0], undefined) : []);
    for (const object of remaining()) {
      try {
        this.#storage.delete(types[0], object.metadata.namespace ?? '', object.metadata.name!);
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 404)) throw error;
      }
    }
    const left = remaining().length;
    const terminating: Condition = left > 0
      ? { type: 'Terminating', status: 'True', reason: 'InstanceDeletionCheck', message: `could not confirm zero CustomResources remaining: ${left} remaining` }
      : { type: 'Terminating', status: 'True', reason: 'InstanceDeletionCompleted', message: 'removed all instances' };
    const conditions = withConditions(crd.status?.conditions, [terminating]);
    if (JSON.stringify(conditions.map(({ lastTransitionTime: _t, ...c }) => c)) !== JSON.stringify((crd.status?.conditions ?? []).map(({ lastTransitionTime: _t, ...c }: Condition) => c))) {
      crd = this.#storage.replace(CRD_TYPE, '', name, { ...crd, status: { ...crd.status, conditions } }, 'status', { fieldManager: 'kube-apiserver' });
    }
    if (left > 0) return;
    const done = { ...crd, metadata: { ...crd.metadata, finalizers: (crd.metadata.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER) } };
    this.#storage.replace(CRD_TYPE, '', name, done, undefined, { fieldManager: 'kube-apiserver' });
  }
}
