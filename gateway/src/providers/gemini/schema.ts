// Gemini models before 2.5 take tool parameters and response schemas only in Google's OpenAPI 3.0
// subset (`Schema`): no `$ref`, `$defs`, `additionalProperties` or `const`; one `type` (a type list
// becomes `nullable` or `anyOf`); `enum` only of strings. Gemini refuses any other keyword ("Unknown
// name … Cannot find field"), so the client's JSON Schema is rewritten into that subset: references
// inlined, `null` alternatives turned into `nullable`, keywords without an equivalent left out.
import { ApiError } from '../../http/errors.ts';

type Json = Record<string, unknown>;

/** The keywords Google's `Schema` message has (besides `type`, `properties`, `items`, `anyOf`, handled below). */
const KEPT = new Set([
  'format', 'title', 'description', 'nullable', 'maxItems', 'minItems', 'required', 'minProperties',
  'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'propertyOrdering', 'default', 'minimum', 'maximum',
]);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
/** How deep references may be inlined: a recursive schema cannot be expressed without `$ref`. */
const MAX_DEPTH = 32;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `schema` (JSON Schema) in Gemini's OpenAPI subset; `param` names it in a 400 when it cannot be expressed. */
export function toGeminiSchema(schema: unknown, param: string): Json {
  if (!isObject(schema)) throw new ApiError(400, 'invalid_schema', 'A JSON Schema must be an object.', { param });
  const definitions = { ...(isObject(schema.definitions) ? schema.definitions : {}), ...(isObject(schema.$defs) ? schema.$defs : {}) };
  return convert(schema, definitions, param, 0);
}

function resolve(ref: string, definitions: Json, param: string): Json {
  const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
  const target = match ? definitions[decodeURIComponent(match[1]).replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  if (!isObject(target)) throw new ApiError(400, 'invalid_schema', `The schema's reference '${ref}' cannot be resolved (only local #/$defs references are).`, { param });
  return target;
}

function convert(node: Json, definitions: Json, param: string, depth: number): Json {
  if (depth > MAX_DEPTH) throw new ApiError(400, 'invalid_schema', 'The schema is recursive or nested too deeply for this Gemini model, which takes no $ref; use a Gemini 2.5 or later model.', { param });
  if (typeof node.$ref === 'string') {
    const { $ref, ...rest } = node;
    return convert({ ...resolve($ref, definitions, param), ...rest }, definitions, param, depth + 1);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) if (KEPT.has(key)) out[key] = value;

  const types = Array.isArray(node.type) ? node.type.map(String) : typeof node.type === 'string' ? [node.type] : [];
  const nonNullTypes = types.filter((type) => type !== 'null' && TYPES.has(type));
  if (nonNullTypes.length < types.length) out.nullable = true;
  if (nonNullTypes.length > 1) {
    // A type list becomes one alternative a type, each keeping the keywords that apply to it.
    const { type: _types, ...rest } = node;
    out.anyOf = nonNullTypes.map((type) => convert({ ...rest, type }, definitions, param, depth + 1));
    return out;
  }
  if (nonNullTypes.length === 1) out.type = nonNullTypes[0];

  const alternatives = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : null;
  if (alternatives) {
    const nonNull = alternatives.filter((alt) => isObject(alt) && alt.type !== 'null') as Json[];
    if (nonNull.length < alternatives.length) out.nullable = true;
    const converted = nonNull.map((alt) => convert(alt, definitions, param, depth + 1));
    if (converted.length === 1) Object.assign(out, converted[0], out.nullable ? { nullable: true } : {});
    else if (converted.length > 1) out.anyOf = converted;
  }

  if (typeof node.const === 'string') {
    out.type = 'string';
    out.enum = [node.const];
  }
  // Gemini's enum is a list of strings on a string schema; an enum of other values cannot be said and is dropped.
  if (Array.isArray(node.enum) && node.enum.every((value) => typeof value === 'string')) {
    out.type = 'string';
    out.enum = node.enum;
  }
  if (isObject(node.properties)) {
    const properties: Json = {};
    for (const [name, value] of Object.entries(node.properties)) if (isObject(value)) properties[name] = convert(value, definitions, param, depth + 1);
    out.properties = properties;
    if (Array.isArray(node.required)) out.required = node.required.filter((name) => typeof name === 'string' && name in properties);
  }
  if (isObject(node.items)) out.items = convert(node.items, definitions, param, depth + 1);
  return out;
}
