// Writes test/schemas/kubernetes.json: strict JSON Schemas (draft-07) of the Kubernetes kinds the Helm
// chart renders, for offline validation in CI (test/e2e/chart.test.ts). Run it again only to move to
// another Kubernetes version: `node scripts/k8s-schemas.ts`, then commit the file.
//
// Source: the models of @kubernetes/client-node (a dependency already), which openapi-generator emits from
// the Kubernetes OpenAPI spec of one release (their header names it). Each model gives the JSON field
// names and types (attributeTypeMap in the .js), and its .d.ts marks the required fields (no `?`).
// Like `kubectl apply`'s strict field validation, an unknown field is an error (additionalProperties:
// false). Only the types reachable from KINDS are written, which keeps the file small.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

type JsonSchema = Record<string, unknown>;
interface Attribute { name: string; baseName: string; type: string; format: string }

/** apiVersion/kind → client-node model. Add a line when the chart renders a new kind. */
export const KINDS: Record<string, string> = {
  'v1/ConfigMap': 'V1ConfigMap',
  'v1/Service': 'V1Service',
  'v1/ServiceAccount': 'V1ServiceAccount',
  'v1/Secret': 'V1Secret',
  'networking.k8s.io/v1/Ingress': 'V1Ingress',
  'apps/v1/Deployment': 'V1Deployment',
  'autoscaling/v2/HorizontalPodAutoscaler': 'V2HorizontalPodAutoscaler',
  'policy/v1/PodDisruptionBudget': 'V1PodDisruptionBudget',
  'networking.k8s.io/v1/NetworkPolicy': 'V1NetworkPolicy',
  'rbac.authorization.k8s.io/v1/Role': 'V1Role',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'V1RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'V1ClusterRole',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'V1ClusterRoleBinding',
  'apiextensions.k8s.io/v1/CustomResourceDefinition': 'V1CustomResourceDefinition',
};

// Maps of resource quantities: the models say string, the API also takes a bare number (`cpu: 1`).
const QUANTITY_MAPS = new Set(['limits', 'requests']);

const require = createRequire(import.meta.url);
const MODELS = path.join(path.dirname(require.resolve('@kubernetes/client-node/package.json')), 'dist/gen/models');

function attributes(model: string): Attribute[] {
  const source = readFileSync(path.join(MODELS, `${model}.js`), 'utf8');
  const start = source.indexOf(`${model}.attributeTypeMap = [`);
  if (start < 0) throw new Error(`${model}: no attributeTypeMap`);
  const json = source.slice(source.indexOf('[', start), source.indexOf('];', start) + 1);
  return JSON.parse(json) as Attribute[];
}

function requiredNames(model: string): Set<string> {
  const declaration = readFileSync(path.join(MODELS, `${model}.d.ts`), 'utf8');
  return new Set([...declaration.matchAll(/^ {4}'([^']+)'(\??):/gm)].filter((m) => m[2] === '').map((m) => m[1]));
}

export function specVersion(): string {
  const header = readFileSync(path.join(MODELS, 'V1Deployment.js'), 'utf8');
  return header.match(/OpenAPI spec version: (\S+)/)![1];
}

export function buildSchemas(): JsonSchema {
  const definitions: Record<string, JsonSchema> = {};
  const pending: string[] = Object.values(KINDS);

  const typeSchema = (type: string, format: string, field: string): JsonSchema => {
    const array = type.match(/^Array<(.+)>$/);
    if (array) return { type: 'array', items: typeSchema(array[1], format, '') };
    const map = type.match(/^\{ \[key: string\]: (.+); \}$/);
    if (map) {
      const values = QUANTITY_MAPS.has(field) && map[1] === 'string' ? { type: ['string', 'number'] } : typeSchema(map[1], '', '');
      return { type: 'object', additionalProperties: values };
    }
    switch (type) {
      case 'string':
        return { type: 'string' };
      case 'Date':
        return { type: 'string' };
      case 'boolean':
        return { type: 'boolean' };
      case 'number':
        return { type: format === 'double' || format === 'float' ? 'number' : 'integer' };
      case 'IntOrString':
        return { type: ['integer', 'string'] };
      case 'any':
        return {};
      default:
        if (!/^[A-Z]\w+$/.test(type) || !attributes(type)) throw new Error(`unknown type ${type}`);
        pending.push(type);
        return { $ref: `#/definitions/${type}` };
    }
  };

  while (pending.length > 0) {
    const model = pending.pop()!;
    if (definitions[model]) continue;
    definitions[model] = {}; // claimed before recursion: JSONSchemaProps refers to itself
    const required = requiredNames(model);
    const properties: Record<string, JsonSchema> = {};
    for (const attribute of attributes(model)) properties[attribute.baseName] = typeSchema(attribute.type, attribute.format, attribute.baseName);
    const requiredFields = attributes(model).filter((a) => required.has(a.name)).map((a) => a.baseName);
    definitions[model] = { type: 'object', properties, additionalProperties: false, ...(requiredFields.length ? { required: requiredFields } : {}) };
  }

  // Each kind pins its own apiVersion and kind, so a Deployment cannot pass as something else.
  for (const [gvk, model] of Object.entries(KINDS)) {
    const kind = gvk.slice(gvk.lastIndexOf('/') + 1);
    const apiVersion = gvk.slice(0, gvk.lastIndexOf('/'));
    const base = definitions[model] as { properties: Record<string, JsonSchema> };
    definitions[`${model}Object`] = { allOf: [{ $ref: `#/definitions/${model}` }], properties: { apiVersion: { const: apiVersion }, kind: { const: kind } }, required: ['apiVersion', 'kind', 'metadata', ...(base.properties.spec && (definitions[model] as { required?: string[] }).required?.includes('spec') ? ['spec'] : [])] };
  }

  const sorted = Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => a.localeCompare(b)));
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'kubernetes.json',
    $comment: `Kubernetes ${specVersion()} (OpenAPI), from @kubernetes/client-node models; generated by scripts/k8s-schemas.ts, do not edit.`,
    kinds: Object.fromEntries(Object.entries(KINDS).map(([gvk, model]) => [gvk, `#/definitions/${model}Object`])),
    definitions: sorted,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = fileURLToPath(new URL('../test/schemas/kubernetes.json', import.meta.url));
  const text = JSON.stringify(buildSchemas(), null, 1) + '\n';
  writeFileSync(out, text);
  console.log(`${path.relative(process.cwd(), out)}: Kubernetes ${specVersion()}, ${Object.keys(KINDS).length} kinds, ${(text.length / 1024).toFixed(0)} KB`);
}
