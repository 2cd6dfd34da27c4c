import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { allCrdsYaml, crdFiles, crdFor, toStructural } from './crd-yaml.ts';
import { GROUP, KINDS, PLURALS, VERSION, type Kind } from './schemas.ts';
import { validateManifest } from './validate.ts';

const CHART_CRDS = fileURLToPath(new URL('../../charts/tollgate/crds/', import.meta.url));

type Node = Record<string, unknown>;

function versionOf(crd: Node): Node {
  return ((crd.spec as Node).versions as Node[])[0];
}
function openApiOf(kind: Kind): Node {
  return (versionOf(crdFor(kind)).schema as Node).openAPIV3Schema as Node;
}

/** Every violation of Kubernetes' structural-schema rules found under `node`. */
function structuralProblems(node: Node, at: string): string[] {
  const problems: string[] = [];
  if (Object.getOwnPropertySymbols(node).length > 0) problems.push(`${at}: symbol keys`);
  if ('$id' in node) problems.push(`${at}: $id`);
  if ('patternProperties' in node) problems.push(`${at}: patternProperties`);
  if ('anyOf' in node || 'allOf' in node || 'not' in node) problems.push(`${at}: anyOf/allOf/not`);
  if (typeof node.type !== 'string' && node['x-kubernetes-preserve-unknown-fields'] !== true) problems.push(`${at}: no type`);
  if ('additionalProperties' in node && 'properties' in node) problems.push(`${at}: additionalProperties beside properties`);
  if (node.additionalProperties === false) problems.push(`${at}: additionalProperties: false`);
  for (const [name, child] of Object.entries((node.properties as Record<string, Node>) ?? {})) problems.push(...structuralProblems(child, `${at}.${name}`));
  if (node.items) problems.push(...structuralProblems(node.items as Node, `${at}[]`));
  if (node.additionalProperties && typeof node.additionalProperties === 'object') problems.push(...structuralProblems(node.additionalProperties as Node, `${at}.*`));
  for (const branch of (node.oneOf as Node[] | undefined) ?? []) {
    // Inside a junctor only value validations are allowed, and only on fields declared outside it.
    const forbidden = Object.keys(branch).filter((k) => ['type', 'description', 'default', 'additionalProperties', 'nullable', 'properties'].includes(k));
    if (forbidden.length > 0) problems.push(`${at}.oneOf: ${forbidden.join(', ')}`);
    for (const field of (branch.required as string[]) ?? []) if (!(node.properties as Node)?.[field]) problems.push(`${at}.oneOf: ${field} is not a declared property`);
  }
  return problems;
}

describe('CRDs generated from the TypeBox schemas', () => {
  it.each(KINDS)('%s: names, version, scope and status subresource', (kind) => {
    const crd = crdFor(kind);
    expect(crd).toMatchObject({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${PLURALS[kind]}.${GROUP}` } });
    expect(crd.spec).toMatchObject({ group: GROUP, scope: 'Namespaced', names: { kind, plural: PLURALS[kind], singular: kind.toLowerCase(), listKind: `${kind}List` } });
    expect(((crd.spec as Node).names as Node).shortNames).not.toHaveLength(0);
    expect(versionOf(crd)).toMatchObject({ name: VERSION, served: true, storage: true, subresources: { status: {} } });
  });

  it.each(KINDS)('%s: the openAPIV3Schema is structural', (kind) => {
    const schema = openApiOf(kind);
    expect(structuralProblems(schema, kind)).toEqual([]);
    const status = (schema.properties as Node).status as Node;
    expect(status).toMatchObject({ type: 'object', properties: { conditions: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }, observedGeneration: { type: 'integer' } } });
    const condition = ((status.properties as Record<string, Node>).conditions.items as Node);
    expect(condition).toMatchObject({ required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'], properties: { status: { enum: ['True', 'False', 'Unknown'] } } });
    expect((schema.properties as Node).metadata).toEqual({ type: 'object' });
  });

  it('keeps validations and descriptions, and turns records into maps', () => {
    const upstream = (openApiOf('Upstream').properties as Node).spec as Node;
    const props = upstream.properties as Record<string, Node>;
    expect(props.baseURL).toMatchObject({ type: 'string', format: 'uri', pattern: '^https?://' });
    expect(props.headers).toMatchObject({ type: 'object', additionalProperties: { type: 'string' } });
    expect(props.maxConnections).toMatchObject({ type: 'integer', minimum: 1, description: expect.any(String) });
    expect(props.credentials).toMatchObject({ type: 'object', oneOf: [{ required: ['env'] }, { required: ['secretRef'] }] });
    const model = (openApiOf('Model').properties as Node).spec as Node;
    expect((model.properties as Record<string, Node>).targets).toMatchObject({ type: 'array', minItems: 1, items: { type: 'object', required: ['upstream'] } });
    const key = (openApiOf('ApiKey').properties as Node).spec as Node;
    expect((key.properties as Record<string, Node>).expiresAt).toMatchObject({ type: 'string', format: 'date-time' });
  });

  it('has the printer columns an operator looks for', () => {
    const columns = (kind: Kind) => (versionOf(crdFor(kind)).additionalPrinterColumns as Node[]).map((c) => c.name);
    for (const kind of KINDS) expect(columns(kind)).toEqual(expect.arrayContaining(['Ready', 'Reason', 'Age']));
    expect(columns('ApiKey')).toEqual(expect.arrayContaining(['Account', 'Status', 'Expires']));
    expect(columns('Account')).toEqual(expect.arrayContaining(['Plan', 'Usage']));
    expect(columns('Model')).toContain('Upstreams');
    expect(columns('Upstream')).toEqual(expect.arrayContaining(['URL', 'Reachable']));
    expect(columns('Plan')).toContain('Models');
  });

  it('refuses what the gateway refuses, on example specs', () => {
    // Kubernetes-side extensions are not JSON Schema; Ajv without strict mode ignores them.
    const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
    const ajv = addFormats(new Ajv({ strict: false }));
    const upstreamSpec = ajv.compile((openApiOf('Upstream').properties as Node).spec as Node);
    const cases: Array<[unknown, boolean]> = [
      [{ baseURL: 'https://api.openai.com/v1', credentials: { env: 'OPENAI_API_KEY' } }, true],
      [{ baseURL: 'https://api.openai.com/v1', credentials: { secretRef: { name: 'openai', key: 'apiKey' } } }, true],
      [{ baseURL: 'https://api.openai.com/v1', credentials: { env: 'X', secretRef: { name: 'openai', key: 'apiKey' } } }, false],
      [{ baseURL: 'ftp://example.com' }, false],
      [{ baseURL: 'https://x.example', maxConnections: 0 }, false],
    ];
    for (const [spec, ok] of cases) {
      expect(upstreamSpec(spec), JSON.stringify(spec)).toBe(ok);
      const manifest = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Upstream', metadata: { name: 'u' }, spec };
      expect(validateManifest(manifest).ok, JSON.stringify(spec)).toBe(ok);
    }
  });

  it('carries the per-kind status fields and the cross-field CEL rules', () => {
    const statusProps = (kind: Kind) => Object.keys((((openApiOf(kind).properties as Node).status as Node).properties as Node));
    expect(statusProps('Upstream')).toEqual(expect.arrayContaining(['reachable', 'latencyMs', 'models', 'lastProbeTime']));
    expect(statusProps('Model')).toContain('targets');
    expect(statusProps('Account')).toContain('usage');
    expect(statusProps('ApiKey')).toEqual(expect.arrayContaining(['phase', 'expired', 'revoked']));
    const key = (openApiOf('ApiKey').properties as Node).spec as Node;
    expect(key['x-kubernetes-validations']).toEqual([expect.objectContaining({ rule: 'has(self.keyHash) || has(self.secretName)' })]);
    expect(key.required).toEqual(['account']);
  });

  it('the file source applies the same CEL rules the CRDs carry, with the field they point at', () => {
    const manifest = (kind: Kind, spec: object) => ({ apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name: 'x' }, spec });
    expect(validateManifest(manifest('ApiKey', { account: 'a' }))).toEqual({ ok: false, problems: [{ field: 'spec', message: expect.stringMatching(/either keyHash .* or secretName .* is required/) }] });
    expect(validateManifest(manifest('ApiKey', { account: 'a', secretName: 'a-key' })).ok).toBe(true);
    expect(validateManifest(manifest('Upstream', { baseURL: 'https://x.example', timeouts: { firstByteMs: 10, totalMs: 5 } }))).toEqual({ ok: false, problems: [{ field: 'spec.timeouts.firstByteMs', message: 'firstByteMs must not exceed totalMs' }] });
    expect(validateManifest(manifest('Upstream', { baseURL: 'https://x.example', timeouts: { firstByteMs: 5, totalMs: 5 } })).ok).toBe(true);
  });

  it('throws on a schema it cannot make structural instead of emitting a bad CRD', () => {
    expect(() => toStructural({ anyOf: [{ type: 'string' }, { type: 'integer' }] })).toThrow(/unions of objects/);
    expect(() => toStructural({ description: 'untyped' })).toThrow(/no single type/);
  });

  it('the multi-document stream holds every CRD', () => {
    const names = allCrdsYaml()
      .split(/^---\n/m)
      .filter((piece) => piece.trim())
      .map((piece) => (parse(piece) as { metadata: { name: string } }).metadata.name);
    expect(names).toEqual(KINDS.map((kind) => `${PLURALS[kind]}.${GROUP}`));
  });

  it('the CRDs checked into charts/tollgate/crds equal freshly generated output', async () => {
    const onDisk = (await readdir(CHART_CRDS)).filter((name) => name.endsWith('.yaml')).sort();
    const fresh = crdFiles().sort((a, b) => a.name.localeCompare(b.name));
    const hint = 'regenerate with: npx node crds/bin/generate.ts';
    expect(onDisk, hint).toEqual(fresh.map((f) => f.name));
    for (const file of fresh) expect(await readFile(path.join(CHART_CRDS, file.name), 'utf8'), `${file.name} is stale; ${hint}`).toBe(file.text);
  });
});
