// Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), the way kubectl get
// asks for it: a Name column, then the CRD's additionalPrinterColumns evaluated per object with the
// rules of apiextensions-apiserver's table convertor — the first JSONPath result only, `date` cells as
// ages, integers and booleans typed, missing values as null (kubectl prints <none>).
import { JSONPath } from 'jsonpath-plus';
import type { KubeObject } from './kube-storage.ts';
import type { PrinterColumn, ResourceType } from './kube-resources.ts';

export function wantsTable(accept: string | undefined): boolean {
  return /as=Table/.test(accept ?? '') && /g=meta\.k8s\.io/.test(accept ?? '');
}

/** Go's duration.HumanDuration, which is what an age cell shows. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  const days = Math.floor(hours / 24) % 365;
  if (hours < 24 * 365 * 8) return days === 0 ? `${years}y` : `${years}y${days}d`;
  return `${years}y`;
}

function cell(column: PrinterColumn, object: KubeObject): unknown {
  const results = JSONPath({ path: `$${column.jsonPath}`, json: object, wrap: true }) as unknown[];
  if (results.length === 0 || results[0] === undefined || results[0] === null) return null;
  const value = results[0];
  if (column.format === 'count') return typeof value === 'object' ? Object.keys(value as object).length : null;
  switch (column.type) {
    case 'string':
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'date': {
      const at = Date.parse(String(value));
      return Number.isNaN(at) ? null : humanDuration(Date.now() - at);
    }
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    default:
      return String(value);
  }
}

export function toTable(type: ResourceType, objects: KubeObject[], listMeta: Record<string, unknown>, includeObject: string | null) {
  const columnDefinitions = [
    { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
    ...type.columns.map((c) => ({ name: c.name, type: c.type, format: c.format === 'count' ? '' : (c.format ?? ''), description: c.description ?? '', priority: c.priority ?? 0 })),
  ];
  const rows = objects.map((object) => {
    const row: Record<string, unknown> = { cells: [object.metadata.name, ...type.columns.map((c) => cell(c, object))] };
    if (includeObject === 'Object') row.object = object;
    else if (includeObject !== 'None') row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
    return row;
  });
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: listMeta, columnDefinitions, rows };
}
