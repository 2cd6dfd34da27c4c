// OpenAI's own OpenAPI document (test/schemas/openai-openapi.yaml, an unedited copy of the public
// openai-openapi repository's spec) as a test oracle: every answer is checked against the response
// schema the spec declares for its operation, every stream event against its event's schema, every
// error against ErrorResponse. The spec is loaded once; its components.schemas are one ajv schema
// (`$id: openai.json`) that operations refer into. Where the spec is wrong or stale, QUIRKS below
// patches the loaded copy narrowly, each patch saying why and checking that it still applies.
import { readFileSync } from 'node:fs';
import { Ajv2019, type ValidateFunction } from 'ajv/dist/2019.js';
import { parse } from 'yaml';

type Schema = Record<string, any>;
const SPEC_FILE = new URL('../schemas/openai-openapi.yaml', import.meta.url);
const spec = parse(readFileSync(SPEC_FILE, 'utf8')) as { info: { version: string }; paths: Record<string, Record<string, any>>; components: { schemas: Record<string, Schema> } };
const schemas = spec.components.schemas;

/** The spec's version (info.version), for failure messages and the docs. */
export const OPENAI_SPEC_VERSION = spec.info.version;

const orNull = (schema: Schema) => ({ anyOf: [schema, { type: 'null' }] });
const oneOfAsAnyOf = ({ oneOf, ...rest }: Schema) => ({ ...rest, anyOf: oneOf });

/**
 * Where the published spec is wrong about the API it describes. Each entry replaces one location of
 * the document (a path from its root); `expect` is what the spec says there today, so a refreshed
 * spec that fixed (or moved) it fails loudly instead of leaving a stale allowance behind.
 */
const QUIRKS: Array<{ at: string[]; why: string; expect: (current: any) => boolean; replace: (current: any) => any }> = [
  {
    at: ['components', 'schemas', 'Embedding', 'properties', 'embedding'],
    why: 'encoding_format=base64 returns the vector as a base64 string; the spec types it as an array of numbers only',
    expect: (s) => s.type === 'array' && !s.anyOf,
    replace: (s) => ({ anyOf: [s, { type: 'string', contentEncoding: 'base64' }] }),
  },
  {
    at: ['components', 'schemas', 'ImagesResponse', 'properties', 'size'],
    why: 'newer GPT image models (and the SDK, which types size as any string) report sizes outside the three enumerated',
    expect: (s) => Array.isArray(s.enum) && s.enum.includes('1024x1024'),
    replace: ({ enum: _, ...s }) => ({ ...s, pattern: '^[0-9]+x[0-9]+$' }),
  },
  {
    at: ['components', 'schemas', 'ModelResponseProperties', 'properties', 'user'],
    why: 'a Response without `user` carries "user": null (every Response example in the spec does); the schema, shared with the request, says string',
    expect: (s) => s.type === 'string',
    replace: orNull,
  },
  {
    at: ['components', 'schemas', 'Response', 'allOf', '2', 'properties', 'usage'],
    why: 'response.created and response.in_progress carry the Response before any usage exists: "usage": null, as in the spec\'s own event examples',
    expect: (s) => s.$ref === '#/components/schemas/ResponseUsage',
    replace: orNull,
  },
  {
    at: ['components', 'schemas', 'OpenAIFile', 'properties', 'expires_at'],
    why: 'a file without an expiry is answered with "expires_at": null by OpenAI (and by the gateway, test/e2e/files.test.ts); the schema says integer',
    expect: (s) => s.type === 'integer',
    replace: orNull,
  },
  {
    at: ['components', 'schemas', 'OpenAIFile', 'properties', 'status_details'],
    why: 'the deprecated status_details is null on every file that did not fail validation; the schema says string',
    expect: (s) => s.type === 'string' && s.deprecated === true,
    replace: orNull,
  },
  // The JSON forms overlap (the plain one is {text}, which every verbose answer also satisfies), so
  // a verbose answer matches two members of a oneOf: any one of them is what is meant.
  {
    at: ['paths', '/audio/transcriptions', 'post', 'responses', '200', 'content', 'application/json', 'schema'],
    why: 'oneOf members that overlap: a verbose_json transcript also satisfies the plain {text} form',
    expect: (s) => Array.isArray(s.oneOf),
    replace: oneOfAsAnyOf,
  },
  {
    at: ['paths', '/audio/translations', 'post', 'responses', '200', 'content', 'application/json', 'schema'],
    why: 'oneOf members that overlap: a verbose_json translation also satisfies the plain {text} form',
    expect: (s) => Array.isArray(s.oneOf),
    replace: oneOfAsAnyOf,
  },
];

/**
 * The spec declares no event stream for legacy completions: each chunk is a CreateCompletionResponse
 * whose `finish_reason` is null until the last chunk of a choice, as OpenAI streams it.
 */
function completionChunkSchema(): Schema {
  const chunk = structuredClone(schemas.CreateCompletionResponse);
  const finishReason = chunk.properties?.choices?.items?.properties?.finish_reason;
  if (!finishReason || finishReason.type !== 'string') throw new Error('OpenAPI oracle: CreateCompletionResponse.choices[].finish_reason moved: update completionChunkSchema in test/helpers/openai-oracle.ts');
  chunk.properties.choices.items.properties.finish_reason = orNull(finishReason);
  return chunk;
}

/**
 * Answers the spec documents by example only, with no schema: checked against the example's shape
 * (so they are not left unchecked), until a refreshed spec declares one (then this entry fails).
 */
const UNDECLARED: Record<string, Schema> = {
  'delete /responses/{response_id}': {
    type: 'object',
    properties: { id: { type: 'string' }, object: { const: 'response' }, deleted: { const: true } },
    required: ['id', 'object', 'deleted'],
  },
};

/** Streams the spec does not declare, and the events they carry. */
const UNDECLARED_STREAMS: Record<string, () => Schema> = {
  // Legacy completions stream CreateCompletionResponse chunks (see completionChunkSchema).
  '/completions': () => named('Tollgate.CompletionStreamChunk'),
  // GET /responses/{id}?stream=true replays the events POST /responses streamed.
  '/responses/{response_id}': () => spec.paths['/responses'].post.responses['200'].content['text/event-stream'].schema,
};

/** Keywords of OpenAPI and of OpenAI's generators that annotate and never constrain, plus the spec's typos of real ones. */
const ANNOTATIONS = [
  'example', 'discriminator', 'x-oaiMeta', 'x-stainless-const', 'x-oaiTypeLabel', 'x-oai-beta', 'x-oaiExpandable', 'x-stainless-skip', 'x-oaiSupportedSDKs',
  // Misspelt constraints in the spec (`optional`, `min_items`, `max_items`): OpenAI's own servers cannot enforce what the spec never says.
  'optional', 'min_items', 'max_items',
  // The document root's container of schemas: a place to refer into, not a keyword.
  'components',
];

function applyQuirks(): void {
  for (const quirk of QUIRKS) {
    const parent = quirk.at.slice(0, -1).reduce<any>((node, key) => node?.[key], spec);
    const key = quirk.at.at(-1)!;
    if (!parent || !(key in parent) || !quirk.expect(parent[key])) {
      throw new Error(`OpenAPI oracle: the quirk at ${quirk.at.join('.')} (${quirk.why}) no longer matches the spec; the refreshed spec may have fixed it: remove or update it in test/helpers/openai-oracle.ts`);
    }
    parent[key] = JSON.parse(JSON.stringify(quirk.replace(parent[key])));
  }
}
applyQuirks();

/**
 * `nullable` is OpenAPI 3.0's way to allow null, left over in this 3.1 document (where it means
 * nothing, and ajv refuses it without a `type`). It is read as its authors meant it: null allowed.
 */
function readNullableAsMeant(node: any): any {
  if (Array.isArray(node)) return node.map(readNullableAsMeant);
  if (!node || typeof node !== 'object') return node;
  const out: any = {};
  for (const [key, value] of Object.entries(node)) out[key] = key === 'nullable' && typeof value === 'boolean' ? value : readNullableAsMeant(value);
  if (typeof out.nullable !== 'boolean') return out;
  const { nullable, ...rest } = out;
  if (!nullable) return rest;
  if (typeof rest.type === 'string') {
    return { ...rest, type: [rest.type, 'null'], ...(Array.isArray(rest.enum) ? { enum: [...rest.enum, null] } : {}) };
  }
  const { description, ...constraint } = rest;
  return { ...(description ? { description } : {}), anyOf: [constraint, { type: 'null' }] };
}
for (const name of Object.keys(schemas)) schemas[name] = readNullableAsMeant(schemas[name]);
schemas['Tollgate.CompletionStreamChunk'] = completionChunkSchema();

// Draft 2019-09 rather than OpenAPI 3.1's 2020-12: the spec uses $recursiveRef/$recursiveAnchor
// (2019-09 keywords) for its recursive filters, and nothing 2020-12 added. Strict mode stays on
// (unknown keywords and formats are errors), but for two lints of the spec's style that do not change
// what validates: `required` without `type: object`, and `required` naming a property declared in a
// sibling allOf member, which JSON Schema allows and the spec does throughout.
const ajv = new Ajv2019({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
ajv.addVocabulary(ANNOTATIONS);
// OpenAPI's formats: the numeric ones describe the number's width (JSON says it already); unixtime
// is seconds since the epoch, so an integer; uri and date are checked; binary bodies are not JSON;
// `png` and the empty format are the spec's strays (on file fields), with nothing to check.
ajv.addFormat('unixtime', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= 0 });
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
for (const name of ['double', 'float']) ajv.addFormat(name, { type: 'number', validate: () => true });
ajv.addFormat('uri', (s: string) => URL.canParse(s));
ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
for (const name of ['binary', 'png', '']) ajv.addFormat(name, () => true);
if (process.env.OPENAI_ORACLE_CLOSED) closeObjects(schemas);
ajv.addSchema({ $id: 'openai.json', components: { schemas } });

/**
 * OPENAI_ORACLE_CLOSED=1: a probe, not a gate. The spec's objects are open (any extra field passes);
 * closed, each object outside an allOf refuses fields the spec does not name, which shows what an
 * answer adds. OpenAI's own answers add some (verbose transcripts' `task`), so this is for reading.
 */
function closeObjects(root: Record<string, Schema>): void {
  const inAllOf = new Set<any>();
  const mark = (node: any) => { if (node?.$ref) inAllOf.add(root[node.$ref.split('/').at(-1)]); else inAllOf.add(node); };
  const walk = (node: any) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node.allOf)) node.allOf.forEach(mark);
    for (const v of Object.values(node)) walk(v);
  };
  walk(root);
  const close = (node: any) => {
    if (Array.isArray(node)) return node.forEach(close);
    if (!node || typeof node !== 'object') return;
    if (node.properties && typeof node.properties === 'object' && node.additionalProperties === undefined && !node.allOf && !node.anyOf && !node.oneOf && !inAllOf.has(node)) node.additionalProperties = false;
    for (const v of Object.values(node)) close(v);
  };
  close(root);
}

const compiled = new Map<string, ValidateFunction>();
/** A validator for a schema of the spec, refs taken as relative to the spec's root. */
function validatorOf(schema: Schema): ValidateFunction {
  const text = JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openai.json#/');
  let validate = compiled.get(text);
  if (!validate) compiled.set(text, (validate = ajv.compile(JSON.parse(text))));
  return validate;
}
const named = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The spec's operation for a method and a path below /v1, with its path template matched. */
function operationOf(method: string, pathname: string): { template: string; operation: any } {
  const path = pathname.replace(/^\/v1/, '').replace(/\/$/, '');
  const candidates = Object.keys(spec.paths).filter((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
  // A literal path (/responses/input_tokens) wins over a template (/responses/{response_id}).
  candidates.sort((a, b) => a.split('{').length - b.split('{').length);
  const template = candidates.find((t) => spec.paths[t][method.toLowerCase()]);
  if (!template) throw new Error(`OpenAPI oracle: the spec has no operation ${method} ${path}`);
  return { template, operation: spec.paths[template][method.toLowerCase()] };
}

/** Schemas of a stream's events: by their `type` when the spec's stream schema is a union of typed events. */
function streamSchemaOf(template: string, operation: any): { byType: Map<string, Schema> | null; schema: Schema } {
  const declared = operation.responses['200']?.content?.['text/event-stream']?.schema ?? UNDECLARED_STREAMS[template]?.();
  if (!declared) throw new Error(`OpenAPI oracle: the spec declares no event stream for ${template}`);
  const target = declared.$ref ? schemas[declared.$ref.split('/').at(-1)] : declared;
  const members: Schema[] = target.anyOf ?? target.oneOf ?? [];
  const byType = new Map<string, Schema>();
  for (const member of members) {
    const resolved = member.$ref ? schemas[member.$ref.split('/').at(-1)] : member;
    const type = resolved?.properties?.type;
    const value = type?.const ?? (type?.enum?.length === 1 ? type.enum[0] : undefined);
    if (typeof value === 'string') byType.set(value, member);
  }
  return { byType: byType.size === members.length && members.length > 0 ? byType : null, schema: declared };
}

function describe(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 12)
    .map((e) => `${e.instancePath || '/'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${e.params.additionalProperty})` : ''}${e.params && 'allowedValues' in e.params ? ` (${(e.params.allowedValues as unknown[]).join(', ')})` : ''} [${e.schemaPath}]`)
    .join('; ');
}

/** Problems of one JSON answer ('' when it conforms): a 2xx against its operation's schema, any error against ErrorResponse. */
export function answerProblems(method: string, pathname: string, status: number, body: unknown): string {
  const { template, operation } = operationOf(method, pathname);
  let schema: Schema | undefined;
  // Every error is ErrorResponse ({error: {...}}), as OpenAI sends it; a few operations' 404s name
  // the inner Error instead, which no answer of OpenAI's has at its top level.
  if (status >= 400) schema = named('ErrorResponse');
  else schema = operation.responses[String(status)]?.content?.['application/json']?.schema;
  const undeclared = UNDECLARED[`${method.toLowerCase()} ${template}`];
  if (undeclared && schema) return `the spec now declares the answer of ${method} ${template}: remove it from UNDECLARED in test/helpers/openai-oracle.ts`;
  schema ??= undeclared;
  if (!schema) return `the spec declares no JSON answer for ${status} ${method} ${template}`;
  const validate = validatorOf(schema);
  return validate(body) ? '' : `${method} ${template} ${status}: ${describe(validate)}`;
}

/** Problems of one stream event's data (already parsed JSON): by its `type` where the spec's events are typed. */
export function eventProblems(method: string, pathname: string, event: unknown): string {
  const { template, operation } = operationOf(method, pathname);
  const { byType, schema } = streamSchemaOf(template, operation);
  let target = schema;
  if (byType) {
    const type = (event as { type?: unknown })?.type;
    const member = typeof type === 'string' ? byType.get(type) : undefined;
    if (!member) return `${template} stream: event type ${JSON.stringify(type)} is not one the spec declares`;
    target = member;
  }
  const validate = validatorOf(target);
  return validate(event) ? '' : `${template} stream event ${JSON.stringify((event as { type?: unknown })?.type ?? '')}: ${describe(validate)}`;
}

/** The `data:` payloads of an SSE text, `[DONE]` left out. */
export function sseData(text: string): unknown[] {
  const events: unknown[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
    if (data && data !== '[DONE]') events.push(JSON.parse(data));
  }
  return events;
}

export interface OracleRecord {
  method: string;
  path: string;
  status: number;
  kind: 'json' | 'stream' | 'other';
  problems: string[];
}

/**
 * A fetch for the openai SDK (or raw calls) that checks every answer it passes on: JSON bodies and
 * each event of a stream. The records say what was checked, so a test can prove it covered each
 * endpoint as well as find no problem.
 */
export function oracleFetch(records: OracleRecord[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const { pathname } = new URL(request.url);
    const type = response.headers.get('content-type') ?? '';
    const record: OracleRecord = { method: request.method, path: pathname, status: response.status, kind: 'other', problems: [] };
    records.push(record);
    const copy = response.clone();
    // Whatever the oracle cannot check is a problem of the record, never an error thrown at the SDK.
    const check = (problem: () => string) => {
      try {
        const found = problem();
        if (found) record.problems.push(found);
      } catch (error) {
        record.problems.push((error as Error).message);
      }
    };
    if (type.startsWith('application/json')) {
      record.kind = 'json';
      const body = await copy.json();
      check(() => answerProblems(request.method, pathname, response.status, body));
    } else if (type.startsWith('text/event-stream')) {
      record.kind = 'stream';
      // Read in the background: the SDK consumes the other branch of the tee as it arrives.
      const done = copy.text().then(
        (text) => check(() => sseData(text).map((event) => eventProblems(request.method, pathname, event)).filter(Boolean).join('\n')),
        (error: Error) => void record.problems.push(`the stream could not be read: ${error.message}`),
      );
      pending.add(done);
      void done.finally(() => pending.delete(done));
    }
    return response;
  };
}
const pending = new Set<Promise<void>>();

/** Waits for the streams oracleFetch is still reading, so their events are checked before a test asserts. */
export async function oracleSettled(): Promise<void> {
  await Promise.all([...pending]);
}
