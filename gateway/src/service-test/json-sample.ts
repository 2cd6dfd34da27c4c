// Builds a value that satisfies a JSON Schema: service-test's tool-call arguments and structured
// outputs. Values are taken from the user's words where the schema allows (an enum value or a
// number the user mentioned, a quoted phrase for a string), so answers read as if they used the
// message, and stay deterministic.
import type { JsonSchema } from './conversation.ts';

export interface SampleHints {
  /** The user's last message, source of plausible strings and numbers. */
  text: string;
}

interface Walk {
  root: JsonSchema;
  hints: SampleHints;
  depth: number;
}

const FORMATS: Record<string, string> = {
  'date-time': '2025-01-01T12:00:00Z',
  date: '2025-01-01',
  time: '12:00:00',
  email: 'user@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  'uri-reference': 'https://example.com/',
  hostname: 'example.com',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  uuid: '00000000-0000-4000-8000-000000000000',
  duration: 'P1D',
};

export function sampleFromSchema(schema: JsonSchema | undefined, hints: SampleHints): unknown {
  return sample(schema ?? { type: 'object', properties: {} }, { root: schema ?? {}, hints, depth: 0 }, '');
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema {
  if (!ref.startsWith('#')) return {};
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = node && typeof node === 'object' ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return (node as JsonSchema) ?? {};
}

function sample(schema: JsonSchema, walk: Walk, name: string, index = 0): unknown {
  if (walk.depth > 12) return null;
  const deeper = { ...walk, depth: walk.depth + 1 };
  if (typeof schema.$ref === 'string') return sample(resolveRef(schema.$ref, walk.root), deeper, name, index);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return pickEnum(schema.enum, walk.hints.text);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const nonNull = branches.find((b) => (b as JsonSchema).type !== 'null') ?? branches[0];
      return sample({ ...schema, [key]: undefined, ...(nonNull as JsonSchema) }, deeper, name, index);
    }
  }
  if (Array.isArray(schema.allOf)) {
    const merged = mergeAll(schema.allOf as JsonSchema[], walk.root);
    return sample({ ...schema, allOf: undefined, ...merged }, deeper, name, index);
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? 'null';
  if (type === undefined) type = schema.properties ? 'object' : schema.items ? 'array' : 'string';
  switch (type) {
    case 'object':
      return sampleObject(schema, deeper);
    case 'array':
      return sampleArray(schema, deeper, name);
    case 'integer':
    case 'number':
      return sampleNumber(schema, type === 'integer', walk.hints.text, index);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return sampleString(schema, walk.hints.text, name, index);
  }
}

function sampleObject(schema: JsonSchema, walk: Walk): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : Object.keys(properties);
  const result: Record<string, unknown> = {};
  for (const key of required) result[key] = sample(properties[key] ?? {}, walk, key);
  const minimum = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
  for (const key of Object.keys(properties)) {
    if (Object.keys(result).length >= minimum) break;
    if (!(key in result)) result[key] = sample(properties[key], walk, key);
  }
  return result;
}

function sampleArray(schema: JsonSchema, walk: Walk, name: string): unknown[] {
  const min = typeof schema.minItems === 'number' ? schema.minItems : 1;
  const max = typeof schema.maxItems === 'number' ? schema.maxItems : Math.max(min, 1);
  const count = Math.min(Math.max(min, 1), max);
  const items = (Array.isArray(schema.prefixItems) ? undefined : (schema.items as JsonSchema)) ?? {};
  if (Array.isArray(schema.prefixItems)) return (schema.prefixItems as JsonSchema[]).map((item, i) => sample(item, walk, name, i));
  return Array.from({ length: count }, (_, i) => sample(items, walk, name, i));
}

function sampleNumber(schema: JsonSchema, integer: boolean, text: string, index: number): number {
  const mentioned = /-?\d+(?:\.\d+)?/.exec(text);
  let value = mentioned ? Number(mentioned[0]) : 1;
  value += index;
  const min = numberOr(schema.minimum, numberOr(schema.exclusiveMinimum, -Infinity, integer ? 1 : 0.001));
  const max = numberOr(schema.maximum, numberOr(schema.exclusiveMaximum, Infinity, integer ? -1 : -0.001));
  value = Math.min(Math.max(value, min), max);
  if (integer) value = Math.ceil(value) > max ? Math.floor(value) : Math.ceil(value);
  const step = typeof schema.multipleOf === 'number' && schema.multipleOf > 0 ? schema.multipleOf : null;
  if (step) value = Math.ceil(value / step) * step > max ? Math.floor(value / step) * step : Math.ceil(value / step) * step;
  return value;
}

function numberOr(bound: unknown, fallback: number, offset = 0): number {
  if (typeof bound === 'number') return bound + offset;
  return fallback;
}

function sampleString(schema: JsonSchema, text: string, name: string, index: number): string {
  let value: string;
  if (typeof schema.format === 'string' && FORMATS[schema.format]) value = FORMATS[schema.format];
  else value = stringFromText(text, name);
  if (index > 0) value = `${value} ${index + 1}`;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  if (value.length < min) value = value.padEnd(min, '.');
  if (value.length > max) value = value.slice(0, max);
  return value;
}

/** `name: value` or `name=value` in the text, then a quoted phrase, then a capitalised word. */
function stringFromText(text: string, name: string): string {
  if (name) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const labelled = new RegExp(`\\b${escaped}\\s*[:=]\\s*("([^"]*)"|([^\\s,;.!?]+))`, 'i').exec(text);
    // Clipped: the value comes from the client's text, which may be megabytes without a break.
    if (labelled) return (labelled[2] ?? labelled[3]).slice(0, 200);
  }
  const quoted = /["“']([^"”']{1,80})["”']/.exec(text);
  if (quoted) return quoted[1];
  const words = text.split(/\s+/).slice(1);
  const proper = words.map((w) => w.replace(/[^\p{L}\p{N}-]/gu, '')).filter((w) => /^\p{Lu}/u.test(w));
  if (proper.length > 0) return proper[proper.length - 1];
  return 'example';
}

function pickEnum(values: unknown[], text: string): unknown {
  const lower = text.toLowerCase();
  return values.find((v) => typeof v === 'string' && v.length > 1 && lower.includes(v.toLowerCase())) ?? values[0];
}

function mergeAll(parts: JsonSchema[], root: JsonSchema): JsonSchema {
  const merged: JsonSchema = {};
  for (let part of parts) {
    if (typeof part.$ref === 'string') part = resolveRef(part.$ref, root);
    for (const [key, value] of Object.entries(part)) {
      if (key === 'properties') merged.properties = { ...(merged.properties as object), ...(value as object) };
      else if (key === 'required') merged.required = [...((merged.required as string[]) ?? []), ...(value as string[])];
      else merged[key] = value;
    }
  }
  return merged;
}
