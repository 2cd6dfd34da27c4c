// Admission in the fake Kubernetes API server: metadata rules every kind has (a DNS-1123 name, valid
// label values), then a CRD's schema (kube-schema.ts) with the fieldValidation the request asked for:
// unknown fields refused (Strict, 400), warned about (Warn, the API server's default) or dropped.
import type { ResourceType } from './kube-resources.ts';
import { admit, type Cause } from './kube-schema.ts';
import { ApiError, type KubeObject, type WriteOptions } from './kube-types.ts';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Defaults and prunes `object` in place; returns the causes of a 422, or throws 400 for strict unknown fields. */
export function admission(type: ResourceType, object: KubeObject, old: KubeObject | null, subresource: 'status' | undefined, options: WriteOptions, schemaValidation: boolean): Cause[] {
  const name = object.metadata.name ?? '';
  const causes: Cause[] = [];
  if (!subresource) {
    if (!DNS_SUBDOMAIN.test(name) || name.length > 253) causes.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character` });
    for (const [key, value] of Object.entries(object.metadata.labels ?? {})) {
      if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) causes.push({ reason: 'FieldValueInvalid', field: `metadata.labels`, message: `Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (label ${key})` });
    }
  }
  if (!subresource && type.validate) causes.push(...type.validate(object, old));
  if (type.schema && schemaValidation) {
    const outcome = admit(type.schema, object, old ?? undefined, subresource);
    if (outcome.unknownFields.length > 0) {
      const validation = options.fieldValidation ?? 'Warn';
      if (validation === 'Strict') {
        const fields = outcome.unknownFields.map((f) => `unknown field "${f}"`).join(', ');
        throw new ApiError(400, 'BadRequest', `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${fields}`);
      }
      if (validation === 'Warn') for (const field of outcome.unknownFields) options.warnings?.push(`unknown field "${field}"`);
    }
    causes.push(...outcome.causes);
  }
  return causes;
}
