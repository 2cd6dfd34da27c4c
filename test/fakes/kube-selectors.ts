// Label selectors and patch documents for the fake Kubernetes API server, as the real one reads them:
// equality- and set-based selectors (`a=b,c!=d,e in (x,y),!f`), JSON merge patches (RFC 7386) and
// JSON patches (RFC 6902: add, remove, replace, test).

export type Labels = Record<string, string> | undefined;
export type LabelSelector = (labels: Labels) => boolean;
/** A label selector and a field selector together, on a whole object. */
export type ObjectSelector = (object: { metadata: { labels?: Record<string, string> }; [field: string]: any }) => boolean;

/** Splits on commas that are not inside `(...)`, so `a in (x,y),b` is two requirements. */
function requirements(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += char;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/** Throws on a selector the real API server would answer with 400. */
export function parseLabelSelector(selector: string | null | undefined): LabelSelector {
  if (!selector) return () => true;
  const tests = requirements(selector).map((requirement): LabelSelector => {
    let match = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(requirement);
    if (match) {
      const [, key, operator, list] = match;
      const values = new Set(list.split(',').map((v) => v.trim()));
      return operator === 'in' ? (l) => l?.[key] !== undefined && values.has(l[key]) : (l) => l?.[key] === undefined || !values.has(l[key]);
    }
    match = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(requirement);
    if (match) {
      const [, key, operator, value] = match;
      return operator === '!=' ? (l) => l?.[key] !== value : (l) => l?.[key] === value;
    }
    match = /^(!?)([\w./-]+)$/.exec(requirement);
    if (match) {
      const [, negate, key] = match;
      return negate ? (l) => l?.[key] === undefined : (l) => l?.[key] !== undefined;
    }
    throw new Error(`unable to parse requirement: ${requirement}`);
  });
  return (labels) => tests.every((test) => test(labels));
}

/** Fields every kind can be selected by, and the extra ones per kind (as kube-apiserver registers them). */
const FIELD_LABELS: Record<string, string[]> = {
  '*': ['metadata.name', 'metadata.namespace'],
  Secret: ['type'],
  Event: ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type', 'regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'reportingController'],
};

function fieldValue(object: Record<string, any>, field: string): string {
  if (field === 'source') return object.source?.component ?? object.reportingController ?? '';
  let node: any = object;
  for (const segment of field.split('.')) node = node?.[segment];
  return node === undefined || node === null ? '' : String(node);
}

/** `metadata.name=a,type!=b`: equality only, as the API server supports; an unknown field is a 400. */
export function parseFieldSelector(selector: string | null | undefined, kind: string): ObjectSelector {
  if (!selector) return () => true;
  const allowed = new Set([...FIELD_LABELS['*'], ...(FIELD_LABELS[kind] ?? [])]);
  const tests = selector.split(',').map((requirement) => {
    const match = /^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(requirement);
    if (!match) throw new Error(`invalid selector: '${selector}'; can't understand '${requirement}'`);
    const [, field, operator, value] = match;
    if (!allowed.has(field)) throw new Error(`field label not supported: ${field}`);
    return operator === '!=' ? (o: Record<string, any>) => fieldValue(o, field) !== value : (o: Record<string, any>) => fieldValue(o, field) === value;
  });
  return (object) => tests.every((test) => test(object));
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** RFC 7386: objects merge recursively, null deletes, anything else (arrays included) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

interface JsonPatchOperation {
  op: string;
  path: string;
  value?: unknown;
}

/** RFC 6902, the operations controllers use; throws (→ 422) when a path or a `test` does not hold. */
export function jsonPatch(target: unknown, operations: JsonPatchOperation[]): unknown {
  if (!Array.isArray(operations)) throw new Error('a JSON patch is an array of operations');
  let document = structuredClone(target);
  for (const { op, path, value } of operations) {
    const segments = path.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (segments.length === 0) {
      if (op === 'replace' || op === 'add') document = structuredClone(value);
      else throw new Error(`unsupported operation ${op} on the whole document`);
      continue;
    }
    const last = segments.pop()!;
    let parent: any = document;
    for (const segment of segments) {
      parent = parent?.[segment];
      if (parent === undefined || parent === null || typeof parent !== 'object') throw new Error(`path ${path} does not exist`);
    }
    const exists = Array.isArray(parent) ? Number(last) < parent.length : Object.hasOwn(parent, last);
    switch (op) {
      case 'test':
        if (JSON.stringify(parent[last]) !== JSON.stringify(value)) throw new Error(`test failed at ${path}`);
        break;
      case 'remove':
        if (!exists) throw new Error(`path ${path} does not exist`);
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      case 'replace':
        if (!exists) throw new Error(`path ${path} does not exist`);
        parent[last] = structuredClone(value);
        break;
      case 'add':
        if (Array.isArray(parent)) parent.splice(last === '-' ? parent.length : Number(last), 0, structuredClone(value));
        else parent[last] = structuredClone(value);
        break;
      default:
        throw new Error(`unsupported JSON patch operation ${op}`);
    }
  }
  return document;
}
