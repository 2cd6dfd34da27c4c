// Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), the way kubectl get
// asks for it: a Name column, then the CRD's additionalPrinterColumns evaluated per object with the
// rules of apiextensions-apiserver's table convertor — the first JSONPath result only, `date` cells as
// ages, integers and booleans typed, missing values as null (kubectl prints <none>).
import { JSONPath } from 'jsonpath-plus';
import type { KubeObject } from './kube-storage.ts';
import { ageOf } from './kube-age.ts';
import type { PrinterColumn, ResourceType } from './kube-resources.ts';

export function wantsTable(accept: string | undefined): boolean {
  return /as=Table/.test(accept ?? '') && /g=meta\.k8s\.io/.test(accept ?? '');
}

function cell(column: PrinterColumn, object: KubeObject): unknown {
  if (column.compute) return column.compute(object);
  const results = JSONPath({ path: `$${column.jsonPath}`, json: object, wrap: true }) as unknown[];
  if (results.length === 0 || results[0] === undefined || results[0] === null) return null;
  const value = results[0];
  if (column.format === 'count') return typeof value === 'object' ? Object.keys(value as object).length : null;
  switch (column.type) {
    case 'string':
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'date': {
      return ageOf(String(value));
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
  const nameColumn = type.nameColumn === false ? [] : [{ name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 }];
  const columnDefinitions = [
    ...nameColumn,
    ...type.columns.map((c) => ({ name: c.name, type: c.type, format: c.format === 'count' ? '' : (c.format ?? ''), description: c.description ?? '', priority: c.priority ?? 0 })),
  ];
  const rows = objects.map((object) => {
    const row: Record<string, unknown> = { cells: [...(nameColumn.length ? [object.metadata.name] : []), ...type.columns.map((c) => cell(c, object))] };
    if (includeObject === 'Object') row.object = object;
    else if (includeObject !== 'None') row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
    return row;
  });
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: listMeta, columnDefinitions, rows };
}
