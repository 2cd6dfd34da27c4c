// Field ownership for the fake Kubernetes API server: metadata.managedFields as server-side apply
// keeps it. Every write records which manager set which fields (FieldsV1); an apply
// (application/apply-patch+yaml) merges the manager's configuration into the object, removes the
// fields that manager applied before and no longer applies (unless someone else also owns them), and
// refuses with 409 a field another manager owns with a different value, unless force=true.
// Simplifications, stated: lists are atomic (replaced whole, owned as one field), and co-ownership
// arises only when two managers apply the same value.

const isObject = (value: unknown): value is Record<string, any> => value !== null && typeof value === 'object' && !Array.isArray(value);

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

type Path = string[];
const key = (path: Path) => JSON.stringify(path);

/** The owned leaves of an object: everything but apiVersion/kind, metadata except labels/annotations/finalizers/ownerReferences, and status or not. */
export function leafPaths(object: Record<string, any>, subresource: string | undefined): Path[] {
  const paths: Path[] = [];
  const walk = (value: unknown, path: Path) => {
    if (isObject(value) && Object.keys(value).length > 0) for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    else paths.push(path);
  };
  for (const [field, value] of Object.entries(object)) {
    if (field === 'apiVersion' || field === 'kind') continue;
    if ((field === 'status') !== (subresource === 'status')) continue;
    if (field === 'metadata') {
      for (const m of ['labels', 'annotations']) if (isObject(value?.[m])) for (const name of Object.keys(value[m])) paths.push(['metadata', m, name]);
      for (const m of ['finalizers', 'ownerReferences']) if (value?.[m] !== undefined) paths.push(['metadata', m]);
      continue;
    }
    walk(value, [field]);
  }
  return paths;
}

export function valueAt(object: unknown, path: Path): unknown {
  let node: any = object;
  for (const segment of path) node = isObject(node) ? node[segment] : undefined;
  return node;
}

function removeAt(object: Record<string, any>, path: Path): void {
  const parents: Array<Record<string, any>> = [];
  let node: any = object;
  for (const segment of path.slice(0, -1)) {
    if (!isObject(node[segment])) return;
    parents.push(node);
    node = node[segment];
  }
  delete node[path[path.length - 1]];
  // Emptied maps go too, as they would after an apply that no longer sets anything in them.
  for (let i = path.length - 2; i >= 0; i--) {
    const parent = parents[i];
    if (isObject(parent[path[i]]) && Object.keys(parent[path[i]]).length === 0 && path[i] !== 'metadata') delete parent[path[i]];
    else break;
  }
}

export function toFieldsV1(paths: Path[]): Record<string, unknown> {
  const root: Record<string, any> = {};
  for (const path of paths) {
    let node = root;
    for (const segment of path) node = node[`f:${segment}`] ??= {};
  }
  return root;
}

export function fromFieldsV1(fields: Record<string, unknown>, prefix: Path = []): Path[] {
  const paths: Path[] = [];
  for (const [name, child] of Object.entries(fields ?? {})) {
    if (!name.startsWith('f:')) continue;
    const path = [...prefix, name.slice(2)];
    if (isObject(child) && Object.keys(child).some((k) => k.startsWith('f:'))) paths.push(...fromFieldsV1(child, path));
    else paths.push(path);
  }
  return paths;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const stamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Records an ordinary write (create, update, patch) by `manager`: it takes every field it changed. */
export function recordUpdate(entries: ManagedFieldsEntry[], before: Record<string, any> | null, after: Record<string, any>, manager: string, apiVersion: string, subresource?: string): ManagedFieldsEntry[] {
  const changed = new Set<string>();
  const present = new Set(leafPaths(after, subresource).map(key));
  const previous = before ? leafPaths(before, subresource) : [];
  for (const path of [...leafPaths(after, subresource), ...previous]) if (!before || !same(valueAt(before, path), valueAt(after, path))) changed.add(key(path));
  const result = entries.map((entry) => ({ ...entry, paths: fromFieldsV1(entry.fieldsV1).filter((p) => !changed.has(key(p)) || entry.subresource !== subresource) }));
  let own = result.find((e) => e.manager === manager && e.operation === 'Update' && e.subresource === subresource);
  if (!own) result.push((own = { manager, operation: 'Update', apiVersion, time: stamp(), fieldsType: 'FieldsV1', fieldsV1: {}, ...(subresource ? { subresource } : {}), paths: [] }));
  const ownKeys = new Set(own.paths.map(key));
  for (const changedKey of changed) if (present.has(changedKey) && !ownKeys.has(changedKey)) own.paths.push(JSON.parse(changedKey));
  if (changed.size > 0) own.time = stamp();
  return finish(result);
}

function finish(entries: Array<ManagedFieldsEntry & { paths: Path[] }>): ManagedFieldsEntry[] {
  return entries.filter((e) => e.paths.length > 0).map(({ paths, ...entry }) => ({ ...entry, fieldsV1: toFieldsV1(paths) }));
}

export interface ApplyConflict {
  manager: string;
  path: Path;
}

/** RFC 7386-like deep merge for apply: maps merge, everything else (lists included) replaces. */
function mergeInto(target: Record<string, any>, config: Record<string, any>): void {
  for (const [k, v] of Object.entries(config)) {
    if (isObject(v) && isObject(target[k])) mergeInto(target[k], v);
    else target[k] = structuredClone(v);
  }
}

/**
 * Server-side apply of `config` by `manager` onto `current` (null: the object does not exist yet).
 * Returns the new object with its managedFields, or the conflicts when not forced.
 */
export function apply(current: Record<string, any> | null, config: Record<string, any>, manager: string, force: boolean, apiVersion: string, subresource?: string): { object: Record<string, any>; conflicts: ApplyConflict[] } {
  const entries = ((current?.metadata?.managedFields ?? []) as ManagedFieldsEntry[]).map((e) => ({ ...e, paths: fromFieldsV1(e.fieldsV1) }));
  const applied = leafPaths(config, subresource);
  const appliedKeys = new Set(applied.map(key));
  const conflicts: ApplyConflict[] = [];
  for (const entry of entries) {
    if ((entry.manager === manager && entry.operation === 'Apply') || entry.subresource !== subresource) continue;
    for (const path of entry.paths) {
      if (appliedKeys.has(key(path)) && !same(valueAt(current, path), valueAt(config, path))) conflicts.push({ manager: entry.manager, path });
    }
  }
  if (conflicts.length > 0 && !force) return { object: current ?? {}, conflicts: conflicts };
  const object = structuredClone(current ?? { metadata: { name: config.metadata?.name, ...(config.metadata?.namespace ? { namespace: config.metadata.namespace } : {}) } });
  const mine = entries.find((e) => e.manager === manager && e.operation === 'Apply' && e.subresource === subresource);
  const ownedByOthers = new Set(entries.filter((e) => e !== mine).flatMap((e) => e.paths.map(key)));
  for (const path of mine?.paths ?? []) if (!appliedKeys.has(key(path)) && !ownedByOthers.has(key(path))) removeAt(object, path);
  const { metadata: configMeta, ...configRest } = config;
  mergeInto(object, configRest);
  for (const m of ['labels', 'annotations']) if (isObject(configMeta?.[m])) object.metadata[m] = { ...object.metadata[m], ...configMeta[m] };
  for (const m of ['finalizers', 'ownerReferences']) if (configMeta?.[m] !== undefined) object.metadata[m] = structuredClone(configMeta[m]);
  // A forced apply takes the conflicting fields from their owners.
  const taken = new Set(conflicts.map((c) => key(c.path)));
  const next = entries.filter((e) => e !== mine).map((e) => ({ ...e, paths: e.paths.filter((p) => !taken.has(key(p))) }));
  next.push({ manager, operation: 'Apply', apiVersion, time: stamp(), fieldsType: 'FieldsV1', fieldsV1: {}, ...(subresource ? { subresource } : {}), paths: applied });
  object.metadata.managedFields = finish(next);
  return { object, conflicts: [] };
}

export function conflictMessage(conflicts: ApplyConflict[], apiVersion: string): string {
  const lines = conflicts.map((c) => `conflict with "${c.manager}" using ${apiVersion}: .${c.path.join('.')}`);
  return `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: ${lines.join('\n')}`;
}
