// CustomResourceDefinitions derived from the TypeBox schemas, so the cluster validates exactly what
// the gateway validates. Kubernetes only accepts *structural* schemas (every node typed, no
// additionalProperties beside properties, no types inside anyOf/oneOf), so the JSON Schema that
// TypeBox produces is rewritten here rather than copied; any construct this module cannot express
// structurally throws, so a new schema feature fails the generator instead of producing a CRD the API
// server would reject.
import { stringify } from 'yaml';
import { CEL, GROUP, KINDS, PLURALS, SPEC_SCHEMAS, VERSION, type Kind } from './schemas.ts';
import { STATUS_SCHEMAS } from './status.ts';

type JsonSchema = Record<string, unknown>;

interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

// READY and REASON everywhere: the Ready condition the operator writes, read server-side into the Table.
const READY: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'The Ready condition, set by the operator.',
};
const REASON: PrinterColumn = {
  name: 'Reason',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: "Why the object is (not) Ready; kubectl describe shows the condition's message.",
};
const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** Per-kind presentation: what `kubectl get` shows and the short names it accepts. */
const PRESENTATION: Record<Kind, { shortNames: string[]; columns: PrinterColumn[] }> = {
  Upstream: {
    shortNames: ['tgupstream', 'tgup'],
    columns: [
      { name: 'URL', type: 'string', jsonPath: '.spec.baseURL' },
      { name: 'Reachable', type: 'boolean', jsonPath: '.status.reachable', description: 'The last probe of GET /models got an answer.' },
      { name: 'Latency', type: 'integer', jsonPath: '.status.latencyMs', description: "The last probe's round trip in milliseconds.", priority: 1 },
      READY,
      REASON,
      AGE,
    ],
  },
  Model: {
    shortNames: ['tgmodel', 'tgm'],
    columns: [
      { name: 'Upstreams', type: 'string', jsonPath: '.spec.targets[*].upstream', description: 'Target upstreams, as listed.' },
      { name: 'Owned By', type: 'string', jsonPath: '.spec.ownedBy', priority: 1 },
      READY,
      REASON,
      AGE,
    ],
  },
  Plan: {
    shortNames: ['tgplan'],
    columns: [
      { name: 'Models', type: 'string', jsonPath: '.spec.models' },
      { name: 'RPM', type: 'integer', jsonPath: '.spec.limits.requestsPerMinute', description: 'Requests per minute, per account.', priority: 1 },
      { name: 'TPM', type: 'integer', jsonPath: '.spec.limits.tokensPerMinute', description: 'Tokens per minute, per account.', priority: 1 },
      READY,
      REASON,
      AGE,
    ],
  },
  Account: {
    shortNames: ['tgaccount', 'tgacct'],
    columns: [
      { name: 'Plan', type: 'string', jsonPath: '.spec.plan', description: 'Empty: the free tier (service-test only).' },
      { name: 'Usage', type: 'string', jsonPath: '.status.usage.summary', description: "This month's tokens, and the share of the budget." },
      { name: 'Spend', type: 'string', jsonPath: '.status.usage.spend', description: "This month's spend, with its currency (Model pricing)." },
      { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName', priority: 1 },
      READY,
      REASON,
      AGE,
    ],
  },
  ApiKey: {
    shortNames: ['tgkey'],
    columns: [
      { name: 'Account', type: 'string', jsonPath: '.spec.account' },
      { name: 'Status', type: 'string', jsonPath: '.status.phase', description: 'Pending, Active, Expired or Revoked.' },
      // string, not date: a date column shows an age, and a future instant would print as <invalid>.
      { name: 'Expires', type: 'string', jsonPath: '.spec.expiresAt' },
      { name: 'Spend', type: 'string', jsonPath: '.status.usage.spend', description: "This month's spend through this key, with its currency." },
      { name: 'Secret', type: 'string', jsonPath: '.spec.secretName', priority: 1 },
      READY,
      REASON,
      AGE,
    ],
  },
};

/** Keywords carried over unchanged: value validations and documentation Kubernetes understands. */
const KEPT = [
  'type',
  'description',
  'format',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'uniqueItems',
  'enum',
  'default',
  'required',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  CEL,
];

/** Rewrites one TypeBox (JSON Schema) node into its structural OpenAPI v3 equivalent. */
export function toStructural(schema: JsonSchema, path = '$'): JsonSchema {
  if (Array.isArray(schema.anyOf)) return mergeObjectUnion(schema, path);
  const out: JsonSchema = {};
  // Copying only known string keys drops TypeBox's symbol keys (Kind, Optional) and `$id`; KEPT's
  // order puts `type` and `description` first, which keeps the YAML readable.
  for (const key of KEPT) if (schema[key] !== undefined) out[key] = schema[key];
  if (typeof out.type !== 'string') throw new Error(`${path}: no single type; cannot express it structurally`);

  if (schema.properties) {
    const properties: JsonSchema = {};
    for (const [name, child] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
      properties[name] = toStructural(child, `${path}.${name}`);
    }
    out.properties = properties;
    // additionalProperties: false is dropped: the API server prunes unknown fields instead.
  }
  if (schema.patternProperties) {
    // Type.Record(String, X) → a map; Kubernetes has no patternProperties, only additionalProperties.
    const values = Object.values(schema.patternProperties as Record<string, JsonSchema>);
    if (values.length !== 1 || schema.properties) throw new Error(`${path}: only a plain string-keyed record can become a map`);
    out.additionalProperties = toStructural(values[0], `${path}.*`);
  } else if (schema.additionalProperties === true && !schema.properties) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (schema.items) out.items = toStructural(schema.items as JsonSchema, `${path}[]`);
  return out;
}

/**
 * A union of objects (e.g. credentials: {env} | {secretRef}) becomes one object holding every
 * branch's properties, plus `oneOf` of the branches' required lists: structural, and still "exactly
 * one of them".
 */
function mergeObjectUnion(schema: JsonSchema, path: string): JsonSchema {
  const branches = schema.anyOf as JsonSchema[];
  const properties: JsonSchema = {};
  const oneOf: JsonSchema[] = [];
  for (const branch of branches) {
    if (branch.type !== 'object' || !branch.properties) throw new Error(`${path}: only unions of objects can be made structural`);
    const required = (branch.required as string[] | undefined) ?? [];
    if (required.length === 0) throw new Error(`${path}: every union branch needs a required property to tell it apart`);
    for (const [name, child] of Object.entries(branch.properties as Record<string, JsonSchema>)) {
      if (name in properties) throw new Error(`${path}.${name}: appears in two union branches`);
      properties[name] = toStructural(child, `${path}.${name}`);
    }
    oneOf.push({ required });
  }
  const out: JsonSchema = { type: 'object' };
  if (typeof schema.description === 'string') out.description = schema.description;
  out.properties = properties;
  out.oneOf = oneOf;
  return out;
}

export function crdFor(kind: Kind): JsonSchema {
  const plural = PLURALS[kind];
  const { shortNames, columns } = PRESENTATION[kind];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/part-of': 'tollgate' },
    },
    spec: {
      group: GROUP,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames, categories: ['tollgate'] },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: columns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                // Kubernetes owns metadata's schema; a CRD may only constrain name, which it does itself.
                metadata: { type: 'object' },
                spec: toStructural(SPEC_SCHEMAS[kind], `${kind}.spec`),
                // Written by the operator only, through /status; undeclared fields are pruned.
                status: toStructural(STATUS_SCHEMAS[kind], `${kind}.status`),
              },
            },
          },
        },
      ],
    },
  };
}

const HEADER = '# Generated from crds/src/schemas.ts by crds/bin/generate.ts (or `tollgate crds -o DIR`). Do not edit.\n';

export function crdYaml(kind: Kind): string {
  return `${HEADER}${stringify(crdFor(kind), { lineWidth: 0 })}`;
}

/** File name per CRD, in the `<group>_<plural>.yaml` convention of controller-gen. */
export function crdFileName(kind: Kind): string {
  return `${GROUP}_${PLURALS[kind]}.yaml`;
}

export function crdFiles(): Array<{ name: string; text: string }> {
  return KINDS.map((kind) => ({ name: crdFileName(kind), text: crdYaml(kind) }));
}

/** Every CRD as one multi-document stream, for `tollgate crds | kubectl apply -f -`. */
export function allCrdsYaml(): string {
  return KINDS.map((kind) => `---\n${crdYaml(kind)}`).join('');
}
