// The resource types the fake Kubernetes API server serves: the built-in ones Tollgate and kubectl
// touch (Secrets, ConfigMaps, core and events.k8s.io Events, EndpointSlices, Leases,
// CustomResourceDefinitions: kube-crds.ts) and the types each established CustomResourceDefinition
// defines (typesFromCrd), registered while it exists. loadCrds reads the chart's CRDs
// (charts/tollgate/crds) for a fake that starts with them installed.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { ageOf } from './kube-age.ts';

export type JsonSchema = Record<string, any>;

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
  /** A built-in column the API server computes rather than reads (an Event's OBJECT, LAST SEEN). */
  compute?(object: Record<string, any>): unknown;
}

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  shortNames: string[];
  categories: string[];
  /** Namespaced objects live under /namespaces/{ns}/; cluster-scoped ones (CRDs) have no namespace. */
  namespaced: boolean;
  /** Custom resources: list items carry apiVersion/kind, updates need a resourceVersion, generation counts spec changes. */
  custom: boolean;
  /** A /status subresource: the main resource ignores status, /status ignores everything else. */
  statusSubresource: boolean;
  /** The CRD's openAPIV3Schema: validation, pruning and defaults. Built-ins are not validated. */
  schema?: JsonSchema;
  /** additionalPrinterColumns of a CRD, or the built-in Table columns. */
  columns: PrinterColumn[];
  /** Tables start with a Name column, except where kube-apiserver's printer has none (Events). */
  nameColumn?: false;
  /** Rules of a built-in kind beyond its schema (a CRD's name and versions), checked at admission. */
  validate?(object: Record<string, any>, old: Record<string, any> | null): Array<{ reason: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueNotSupported'; field: string; message: string }>;
  /** Set while its CustomResourceDefinition is being deleted: no new objects are accepted. */
  terminating?: boolean;
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export const verbsOf = (_type: ResourceType) => VERBS;

export const apiVersionOf = (type: ResourceType) => (type.group ? `${type.group}/${type.version}` : type.version);
export const qualified = (type: ResourceType) => (type.group ? `${type.plural}.${type.group}` : type.plural);

export const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** kube-apiserver's Event printer: LAST SEEN, TYPE, REASON, OBJECT (kind/name), MESSAGE, and more with -o wide. */
function eventColumns(regarding: string, message: string): PrinterColumn[] {
  const since = (at: unknown) => (typeof at === 'string' && at ? ageOf(at) : null);
  return [
    { name: 'Last Seen', type: 'string', jsonPath: '', compute: (e) => since(e.series?.lastObservedTime ?? e.lastTimestamp ?? e.deprecatedLastTimestamp ?? e.eventTime) },
    { name: 'Type', type: 'string', jsonPath: '.type' },
    { name: 'Reason', type: 'string', jsonPath: '.reason' },
    { name: 'Object', type: 'string', jsonPath: '', compute: (e) => `${String(e[regarding]?.kind ?? '').toLowerCase()}/${e[regarding]?.name ?? ''}` },
    { name: 'Subobject', type: 'string', jsonPath: `.${regarding}.fieldPath`, priority: 1 },
    { name: 'Source', type: 'string', jsonPath: '', priority: 1, compute: (e) => e.source?.component ?? e.reportingComponent ?? e.reportingController ?? null },
    { name: 'Message', type: 'string', jsonPath: `.${message}` },
    { name: 'First Seen', type: 'string', jsonPath: '', priority: 1, compute: (e) => since(e.firstTimestamp ?? e.deprecatedFirstTimestamp ?? e.eventTime) },
    { name: 'Count', type: 'integer', jsonPath: '.count', priority: 1 },
    { name: 'Name', type: 'string', jsonPath: '.metadata.name', priority: 1 },
  ];
}

function builtin(group: string, version: string, kind: string, plural: string, shortNames: string[], columns: PrinterColumn[]): ResourceType {
  return { group, version, plural, singular: kind.toLowerCase(), kind, shortNames, categories: [], namespaced: true, custom: false, statusSubresource: false, columns: [...columns, AGE] };
}

export const BUILTIN_TYPES: readonly ResourceType[] = [
  builtin('', 'v1', 'Secret', 'secrets', [], [
    { name: 'Type', type: 'string', jsonPath: '.type' },
    { name: 'Data', type: 'integer', jsonPath: '.data', format: 'count' },
  ]),
  builtin('', 'v1', 'ConfigMap', 'configmaps', ['cm'], [{ name: 'Data', type: 'integer', jsonPath: '.data', format: 'count' }]),
  { ...builtin('', 'v1', 'Event', 'events', ['ev'], []), columns: eventColumns('involvedObject', 'message'), nameColumn: false },
  { ...builtin('events.k8s.io', 'v1', 'Event', 'events', ['ev'], []), columns: eventColumns('regarding', 'note'), nameColumn: false },
  builtin('discovery.k8s.io', 'v1', 'EndpointSlice', 'endpointslices', [], [
    { name: 'AddressType', type: 'string', jsonPath: '.addressType' },
    { name: 'Endpoints', type: 'string', jsonPath: '.endpoints[*].addresses[0]' },
  ]),
  builtin('coordination.k8s.io', 'v1', 'Lease', 'leases', [], [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity' }]),
];

/** A ResourceType per served version of a CustomResourceDefinition (apiextensions.k8s.io/v1). */
export function typesFromCrd(crd: JsonSchema): ResourceType[] {
  if (crd?.kind !== 'CustomResourceDefinition') throw new Error(`not a CustomResourceDefinition: ${crd?.kind}`);
  const { group, names, scope, versions } = crd.spec;
  return (versions as JsonSchema[])
    .filter((v) => v.served)
    .map((v) => ({
      group,
      version: v.name,
      plural: names.plural,
      singular: names.singular ?? names.kind.toLowerCase(),
      kind: names.kind,
      shortNames: names.shortNames ?? [],
      categories: names.categories ?? [],
      namespaced: scope !== 'Cluster',
      custom: true,
      statusSubresource: v.subresources?.status !== undefined,
      schema: v.schema?.openAPIV3Schema,
      columns: v.additionalPrinterColumns ?? [AGE],
    }));
}

export const CHART_CRDS_DIR = fileURLToPath(new URL('../../charts/tollgate/crds/', import.meta.url));

/** Every CustomResourceDefinition in the YAML files of a directory (the chart's crds/ by default). */
export function loadCrds(dir = CHART_CRDS_DIR): JsonSchema[] {
  const crds: JsonSchema[] = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const document of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      const object = document.toJS();
      if (object?.kind === 'CustomResourceDefinition') crds.push(object);
    }
  }
  return crds;
}

