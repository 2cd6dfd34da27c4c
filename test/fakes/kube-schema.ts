// CRD schema handling as kube-apiserver's apiextensions code does it, for the structural schemas
// Tollgate's CRDs use: defaults for missing fields, pruning of fields the schema does not declare
// (reported so the caller can refuse them under fieldValidation=Strict, or warn), then validation
// with the API server's field paths and messages — type, required, enum, pattern, format,
// bounds, oneOf, and `x-kubernetes-validations` CEL rules (evaluated with @marcbachmann/cel-js).
import { Environment } from '@marcbachmann/cel-js';
import type { JsonSchema } from './kube-resources.ts';

export interface Cause {
  reason: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueNotSupported' | 'FieldValueTooLong' | 'FieldValueTypeInvalid';
  /** As kubectl prints it after the field: `Required value`, `Invalid value: "x": ...`. */
  message: string;
  field: string;
}

export interface SchemaOutcome {
  causes: Cause[];
  /** Paths of fields the schema does not declare; they have been removed from the object. */
  unknownFields: string[];
}

const isObject = (value: unknown): value is Record<string, any> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Go's %v-ish rendering of a value in `Invalid value: ...`. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (isObject(value)) return '"object"';
  if (Array.isArray(value)) return '"array"';
  return String(value);
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Applies defaults and prunes undeclared fields, in place; returns the pruned paths. */
export function defaultAndPrune(schema: JsonSchema, value: unknown, path: string, unknown: string[], root = true): void {
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => defaultAndPrune(schema.items, item, `${path}[${i}]`, unknown, false));
    return;
  }
  if (!isObject(value)) return;
  const properties: Record<string, JsonSchema> | undefined = schema.properties;
  for (const key of Object.keys(value)) {
    const child = properties?.[key] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined);
    // metadata, apiVersion and kind belong to the API server at the root; they are never pruned here.
    if (root && (key === 'metadata' || key === 'apiVersion' || key === 'kind')) continue;
    if (value[key] === null && !child?.nullable) {
      delete value[key];
      continue;
    }
    if (child) defaultAndPrune(child, value[key], join(path, key), unknown, false);
    else if (!schema['x-kubernetes-preserve-unknown-fields'] && schema.additionalProperties !== true) {
      unknown.push(join(path, key));
      delete value[key];
    }
  }
  for (const [key, child] of Object.entries(properties ?? {})) {
    if (value[key] === undefined && child.default !== undefined) value[key] = structuredClone(child.default);
  }
}

const FORMATS: Record<string, RegExp> = {
  'date-time': /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/,
  uri: /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/,
};

function typeMatches(type: string | undefined, value: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    default:
      return true;
  }
}

const celEnvironment = new Environment({ unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false });
const compiled = new Map<string, ReturnType<typeof celEnvironment.parse>>();

function celHolds(rule: string, self: unknown, oldSelf: unknown): boolean | Error {
  try {
    let program = compiled.get(rule);
    if (!program) compiled.set(rule, (program = celEnvironment.parse(rule)));
    return program({ self, ...(oldSelf !== undefined ? { oldSelf } : {}) }) === true;
  } catch (error) {
    return error as Error;
  }
}

/** Validates `value` against a structural schema; `old` is the stored value, for CEL transition rules. */
export function validate(schema: JsonSchema, value: unknown, path: string, causes: Cause[], old?: unknown): void {
  const invalid = (detail: string) => causes.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${shown(value)}: ${detail}` });
  if (!typeMatches(schema.type, value)) {
    causes.push({ reason: 'FieldValueTypeInvalid', field: path, message: `Invalid value: ${shown(value)}: ${path} in body must be of type ${schema.type}: ${shown(value)}` });
    return;
  }
  if (schema.enum && !schema.enum.some((allowed: unknown) => JSON.stringify(allowed) === JSON.stringify(value))) {
    causes.push({ reason: 'FieldValueNotSupported', field: path, message: `Unsupported value: ${shown(value)}: supported values: ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(', ')}` });
  }
  if (typeof value === 'string') {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) causes.push({ reason: 'FieldValueTooLong', field: path, message: `Too long: may not be more than ${schema.maxLength} bytes` });
    if (schema.minLength !== undefined && value.length < schema.minLength) invalid(`${path} in body should be at least ${schema.minLength} chars long`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) invalid(`${path} in body should match '${schema.pattern}'`);
    if (schema.format && FORMATS[schema.format] && !FORMATS[schema.format].test(value)) invalid(`${path} in body must be of type ${schema.format}: ${shown(value)}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) invalid(`${path} in body should be greater than or equal to ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) invalid(`${path} in body should be less than or equal to ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    // For item counts the API server shows the count as the invalid value.
    if (schema.minItems !== undefined && value.length < schema.minItems) causes.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${value.length}: ${path} in body should have at least ${schema.minItems} items` });
    if (schema.maxItems !== undefined && value.length > schema.maxItems) causes.push({ reason: 'FieldValueTooLong', field: path, message: `Too many: ${value.length}: must have at most ${schema.maxItems} items` });
    const keys: string[] | undefined = schema['x-kubernetes-list-type'] === 'map' ? schema['x-kubernetes-list-map-keys'] : undefined;
    const seen = new Set<string>();
    value.forEach((item, i) => {
      if (keys && isObject(item)) {
        const identity = JSON.stringify(keys.map((k) => item[k]));
        if (seen.has(identity)) causes.push({ reason: 'FieldValueInvalid', field: `${path}[${i}]`, message: `Duplicate value: ${JSON.stringify(Object.fromEntries(keys.map((k) => [k, item[k]])))}` });
        seen.add(identity);
      }
      if (schema.items) validate(schema.items, item, `${path}[${i}]`, causes, undefined);
    });
  }
  if (isObject(value)) {
    for (const name of schema.required ?? []) {
      if (value[name] === undefined) causes.push({ reason: 'FieldValueRequired', field: join(path, name), message: 'Required value' });
    }
    for (const [name, child] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
      if (value[name] !== undefined) validate(child, value[name], join(path, name), causes, isObject(old) ? old[name] : undefined);
    }
    if (isObject(schema.additionalProperties)) {
      for (const [name, child] of Object.entries(value)) if (!schema.properties?.[name]) validate(schema.additionalProperties, child, join(path, name), causes);
    }
  }
  if (Array.isArray(schema.oneOf)) {
    const matching = schema.oneOf.filter((branch: JsonSchema) => {
      const inner: Cause[] = [];
      validate({ ...branch, type: schema.type }, value, path, inner);
      return inner.length === 0;
    }).length;
    if (matching !== 1) invalid(`${path} in body must validate one and only one schema (oneOf). Found ${matching} valid alternatives`);
  }
  for (const { rule, message, messageExpression: _m, fieldPath, reason } of (schema['x-kubernetes-validations'] ?? []) as JsonSchema[]) {
    // A transition rule (one that reads oldSelf) is only checked on updates, where an old value exists.
    if (/\boldSelf\b/.test(rule) && old === undefined) continue;
    const holds = celHolds(rule, value, old);
    const field = fieldPath ? `${path}${fieldPath}` : path;
    if (holds instanceof Error) causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${shown(value)}: rule compile/evaluation error: ${holds.message}` });
    else if (!holds) causes.push({ reason: reason ?? 'FieldValueInvalid', field, message: `Invalid value: ${shown(value)}: ${message ?? `failed rule: ${rule}`}` });
  }
}

/** Defaults, prunes and validates one object of a CRD; `old` is the stored object on updates. */
export function admit(schema: JsonSchema, object: Record<string, any>, old?: Record<string, any>, only?: 'status'): SchemaOutcome {
  const unknownFields: string[] = [];
  defaultAndPrune(schema, object, '', unknownFields);
  const causes: Cause[] = [];
  // The root's metadata is the API server's; name rules are checked elsewhere.
  const { metadata: _meta, ...rest } = schema.properties ?? {};
  const body = { ...schema, properties: rest };
  if (only === 'status') {
    if (object.status !== undefined && schema.properties?.status) validate(schema.properties.status, object.status, 'status', causes, old?.status);
  } else {
    validate(body, object, '', causes, old);
  }
  return { causes, unknownFields };
}
