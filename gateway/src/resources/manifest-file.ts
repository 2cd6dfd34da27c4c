// Edits to the standalone manifest file, shared by the CLI and the first-start bootstrap. Writes are
// atomic (temporary file + rename), so the hot-reloading gateway never reads half a file, and the
// operator's comments and layout survive because documents are edited in place, not re-serialised.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { parseAllDocuments, stringify } from 'yaml';
import type { AnyResource } from '@tollgate/crds';

export async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temporary, text, { mode: 0o600 });
  await rename(temporary, file);
}

export function manifestToYaml(resource: AnyResource): string {
  return stringify(resource, { lineWidth: 0 });
}

export async function appendDocuments(file: string, resources: AnyResource[]): Promise<void> {
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const pieces = resources.map((resource) => `---\n${manifestToYaml(resource)}`);
  const separator = text === '' || text.endsWith('\n') ? '' : '\n';
  await writeAtomically(file, `${text}${separator}${pieces.join('')}`);
}

/** Applies `edit` to the spec of one document; returns false when no such document exists. */
export async function editSpec(file: string, kind: string, name: string, edit: (spec: Record<string, unknown>) => void): Promise<boolean> {
  const text = await readFile(file, 'utf8');
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) return false;
  const target = documents.find((d) => d.get('kind') === kind && d.getIn(['metadata', 'name']) === name);
  if (!target) return false;
  const before = (target.get('spec') as { toJSON(): Record<string, unknown> } | undefined)?.toJSON() ?? {};
  const spec = structuredClone(before);
  edit(spec);
  // Set only the fields that changed, so comments and layout inside the spec survive.
  for (const key of new Set([...Object.keys(before), ...Object.keys(spec)])) {
    if (!(key in spec)) target.deleteIn(['spec', key]);
    else if (JSON.stringify(spec[key]) !== JSON.stringify(before[key])) target.setIn(['spec', key], target.createNode(spec[key]));
  }
  await writeAtomically(file, documents.map((d) => d.toString({ lineWidth: 0 })).join(''));
  return true;
}

export async function readResources(file: string): Promise<unknown[]> {
  const documents = parseAllDocuments(await readFile(file, 'utf8'));
  return Array.isArray(documents) ? documents.map((d) => d.toJS()).filter((v) => v !== null && v !== undefined) : [];
}
