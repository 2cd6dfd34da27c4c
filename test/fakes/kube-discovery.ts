// Discovery and OpenAPI for the fake Kubernetes API server: what kubectl reads before it does anything.
// Legacy discovery (/api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>), aggregated
// discovery (apidiscovery.k8s.io/v2, when the Accept header asks for it), /version, and OpenAPI v3
// (/openapi/v3 and one document per group-version). kubectl reads OpenAPI v3 to learn that PATCH
// takes fieldValidation (so validation happens here, server-side, as kubectl --validate=strict
// expects) and which patch types a kind accepts; `kubectl explain` reads the schemas.
import { createHash } from 'node:crypto';
import { apiVersionOf, verbsOf, type JsonSchema, type ResourceType } from './kube-resources.ts';

export const VERSION_INFO = { major: '1', minor: '33', gitVersion: 'v1.33.0-tollgate-fake', gitCommit: '', gitTreeState: 'clean', buildDate: '2025-01-01T00:00:00Z', goVersion: 'go1.24', compiler: 'gc', platform: 'linux/amd64' };

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

export interface DiscoveryAnswer {
  body: unknown;
  contentType?: string;
}

function groupsOf(types: readonly ResourceType[]): Map<string, Map<string, ResourceType[]>> {
  const groups = new Map<string, Map<string, ResourceType[]>>();
  for (const type of types) {
    const versions = groups.get(type.group) ?? new Map<string, ResourceType[]>();
    versions.set(type.version, [...(versions.get(type.version) ?? []), type]);
    groups.set(type.group, versions);
  }
  return groups;
}

function apiResources(types: ResourceType[]) {
  return types.flatMap((type) => [
    { name: type.plural, singularName: type.singular, namespaced: type.namespaced, kind: type.kind, verbs: verbsOf(type), ...(type.shortNames.length ? { shortNames: type.shortNames } : {}), ...(type.categories.length ? { categories: type.categories } : {}), storageVersionHash: hash(`${apiVersionOf(type)}/${type.kind}`) },
    ...(type.statusSubresource ? [{ name: `${type.plural}/status`, singularName: '', namespaced: type.namespaced, kind: type.kind, verbs: ['get', 'patch', 'update'] }] : []),
  ]);
}

function aggregatedResources(types: ResourceType[]) {
  return types.map((type) => ({
    resource: type.plural,
    responseKind: { group: type.group, version: type.version, kind: type.kind },
    scope: type.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: type.singular,
    verbs: verbsOf(type),
    ...(type.shortNames.length ? { shortNames: type.shortNames } : {}),
    ...(type.categories.length ? { categories: type.categories } : {}),
    ...(type.statusSubresource ? { subresources: [{ subresource: 'status', responseKind: { group: type.group, version: type.version, kind: type.kind }, verbs: ['get', 'patch', 'update'] }] } : {}),
  }));
}

const hash = (text: string) => createHash('sha256').update(text).digest('base64').slice(0, 11);

/** The discovery document for a path, or null when the path is not a discovery path. */
export function discovery(types: readonly ResourceType[], parts: string[], accept: string | undefined): DiscoveryAnswer | null {
  const groups = groupsOf(types);
  const aggregated = (accept ?? '').includes('as=APIGroupDiscoveryList') && (accept ?? '').includes('v=v2;');
  if (parts.length === 1 && parts[0] === 'api') {
    if (aggregated) {
      const versions = [...(groups.get('') ?? new Map()).entries()].map(([version, list]) => ({ version, resources: aggregatedResources(list), freshness: 'Current' }));
      return { contentType: AGGREGATED, body: { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: [{ metadata: { creationTimestamp: null }, versions }] } };
    }
    return { body: { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] } };
  }
  if (parts.length === 2 && parts[0] === 'api') {
    const list = groups.get('')?.get(parts[1]);
    return list ? { body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: parts[1], resources: apiResources(list) } } : null;
  }
  if (parts.length === 1 && parts[0] === 'apis') {
    const named = [...groups.entries()].filter(([group]) => group !== '');
    if (aggregated) {
      const items = named.map(([group, versions]) => ({
        metadata: { name: group, creationTimestamp: null },
        versions: [...versions.entries()].map(([version, list]) => ({ version, resources: aggregatedResources(list), freshness: 'Current' })),
      }));
      return { contentType: AGGREGATED, body: { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items } };
    }
    return { body: { kind: 'APIGroupList', apiVersion: 'v1', groups: named.map(([group, versions]) => apiGroup(group, [...versions.keys()])) } };
  }
  if (parts.length === 2 && parts[0] === 'apis') {
    const versions = groups.get(parts[1]);
    return versions && parts[1] !== '' ? { body: { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(parts[1], [...versions.keys()]) } } : null;
  }
  if (parts.length === 3 && parts[0] === 'apis') {
    const list = groups.get(parts[1])?.get(parts[2]);
    return list ? { body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${parts[1]}/${parts[2]}`, resources: apiResources(list) } } : null;
  }
  return null;
}

function apiGroup(name: string, versions: string[]) {
  const listed = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: listed, preferredVersion: listed[0] };
}

// ---- OpenAPI v3 ----

const QUERY = (name: string, description: string) => ({ name, in: 'query', description, schema: { type: 'string', uniqueItems: true } });
const WRITE_PARAMETERS = [
  QUERY('dryRun', 'When present, indicates that modifications should not be persisted.'),
  QUERY('fieldManager', 'The name of the actor or entity that is making these changes.'),
  QUERY('fieldValidation', 'Ignore, Warn or Strict: what to do with unknown or duplicate fields.'),
];
const OBJECT_META_REF = '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

function definitionName(type: ResourceType): string {
  const group = type.group ? type.group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${group}.${type.version}.${type.kind}`;
}

function schemaOf(type: ResourceType): JsonSchema {
  const gvk = [{ group: type.group, version: type.version, kind: type.kind }];
  const base = type.schema ? structuredClone(type.schema) : { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: {} };
  base.properties = { ...base.properties, apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { allOf: [{ $ref: OBJECT_META_REF }], default: {} } };
  return { ...base, 'x-kubernetes-group-version-kind': gvk };
}

function pathsOf(type: ResourceType): JsonSchema {
  const gvk = { group: type.group, version: type.version, kind: type.kind };
  const ref = { $ref: `#/components/schemas/${definitionName(type)}` };
  const json = { 'application/json': { schema: ref } };
  const patchTypes = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'];
  const patchBody = { content: Object.fromEntries(patchTypes.map((t) => [t, { schema: { type: 'object' } }])) };
  const version = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  const base = type.namespaced ? `${version}/namespaces/{namespace}` : version;
  const namespaceParameter = type.namespaced ? [{ name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }] : [];
  const operation = (action: string, extra: JsonSchema = {}) => ({ 'x-kubernetes-action': action, 'x-kubernetes-group-version-kind': gvk, responses: { '200': { description: 'OK', content: json } }, ...extra });
  const item = {
    get: operation('get'),
    put: operation('put', { parameters: WRITE_PARAMETERS, requestBody: { content: json } }),
    patch: operation('patch', { parameters: [...WRITE_PARAMETERS, QUERY('force', 'Force is going to "force" Apply requests.')], requestBody: patchBody }),
    delete: operation('delete'),
    parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }, ...namespaceParameter],
  };
  const collection = {
    get: operation('list'),
    post: operation('post', { parameters: WRITE_PARAMETERS, requestBody: { content: json } }),
    parameters: namespaceParameter,
  };
  const paths: JsonSchema = { [`${base}/${type.plural}`]: collection, [`${base}/${type.plural}/{name}`]: item };
  if (type.statusSubresource) paths[`${base}/${type.plural}/{name}/status`] = { ...item, delete: undefined };
  return paths;
}

const OBJECT_META = {
  type: 'object',
  description: 'Standard object metadata.',
  properties: {
    name: { type: 'string' },
    generateName: { type: 'string' },
    namespace: { type: 'string' },
    uid: { type: 'string' },
    resourceVersion: { type: 'string' },
    generation: { type: 'integer', format: 'int64' },
    creationTimestamp: { type: 'string', format: 'date-time' },
    deletionTimestamp: { type: 'string', format: 'date-time' },
    labels: { type: 'object', additionalProperties: { type: 'string', default: '' } },
    annotations: { type: 'object', additionalProperties: { type: 'string', default: '' } },
    finalizers: { type: 'array', items: { type: 'string', default: '' }, 'x-kubernetes-list-type': 'set' },
    ownerReferences: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, 'x-kubernetes-patch-merge-key': 'uid', 'x-kubernetes-patch-strategy': 'merge' },
    managedFields: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
  },
};

function groupVersionKey(type: ResourceType): string {
  return type.group ? `apis/${type.group}/${type.version}` : `api/${type.version}`;
}

export function openApiV3Index(types: readonly ResourceType[]) {
  const keys = [...new Set(types.map(groupVersionKey))];
  return { paths: Object.fromEntries(keys.map((key) => [key, { serverRelativeURL: `/openapi/v3/${key}?hash=${hash(JSON.stringify(openApiV3Document(types, key)))}` }])) };
}

/** The OpenAPI v3 document of one group-version ("apis/tollgate.dev/v1alpha1", "api/v1"), or null. */
export function openApiV3Document(types: readonly ResourceType[], key: string): JsonSchema | null {
  const members = types.filter((type) => groupVersionKey(type) === key);
  if (members.length === 0) return null;
  const schemas: JsonSchema = { 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': OBJECT_META };
  let paths: JsonSchema = {};
  for (const type of members) {
    schemas[definitionName(type)] = schemaOf(type);
    paths = { ...paths, ...pathsOf(type) };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: VERSION_INFO.gitVersion }, paths, components: { schemas } };
}
