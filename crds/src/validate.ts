// One validator for every source of manifests. Errors name the document and the field, because the
// operator reading a refusal has to find the line to fix.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { celProblems } from './cel-rules.ts';
import { API_VERSION, KINDS, ObjectMeta, SPEC_SCHEMAS, type AnyResource, type Kind } from './schemas.ts';

export interface ManifestProblem {
  /** JSON-pointer-like path of the offending field, e.g. `spec.targets[0].upstream`. */
  field: string;
  message: string;
}

export type ValidationResult = { ok: true; resource: AnyResource } | { ok: false; problems: ManifestProblem[] };

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
const validateMeta = ajv.compile(ObjectMeta);
const validateSpec = new Map<Kind, ValidateFunction>(KINDS.map((kind) => [kind, ajv.compile(SPEC_SCHEMAS[kind])]));

function fieldOf(prefix: string, error: ErrorObject): string {
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') segments.push(String(error.params.additionalProperty));
  let path = prefix;
  for (const segment of segments) path += /^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`;
  return path;
}

function describe(prefix: string, errors: ErrorObject[] | null | undefined): ManifestProblem[] {
  // anyOf/oneOf failures repeat once per branch; keep the first message for each field.
  const seen = new Map<string, ManifestProblem>();
  for (const error of errors ?? []) {
    const field = fieldOf(prefix, error);
    if (!seen.has(field)) seen.set(field, { field, message: error.keyword === 'additionalProperties' ? 'is not a known field' : (error.message ?? 'is invalid') });
  }
  return [...seen.values()];
}

export function isKind(value: unknown): value is Kind {
  return typeof value === 'string' && (KINDS as string[]).includes(value);
}

export function validateManifest(doc: unknown): ValidationResult {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return { ok: false, problems: [{ field: '(document)', message: 'must be a mapping with apiVersion, kind, metadata and spec' }] };
  }
  const manifest = doc as Record<string, unknown>;
  const problems: ManifestProblem[] = [];
  if (manifest.apiVersion !== API_VERSION) problems.push({ field: 'apiVersion', message: `must be ${API_VERSION}` });
  if (!isKind(manifest.kind)) problems.push({ field: 'kind', message: `must be one of ${KINDS.join(', ')}` });
  if (!validateMeta(manifest.metadata ?? null)) problems.push(...describe('metadata', validateMeta.errors));
  if (isKind(manifest.kind)) {
    const validate = validateSpec.get(manifest.kind)!;
    if (manifest.spec === undefined) problems.push({ field: 'spec', message: 'is required' });
    else if (!validate(manifest.spec)) problems.push(...describe('spec', validate.errors));
    // The cross-field (CEL) rules only once the shape is right, as the API server orders them.
    else problems.push(...celProblems(SPEC_SCHEMAS[manifest.kind], manifest.spec, 'spec'));
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, resource: manifest as unknown as AnyResource };
}
