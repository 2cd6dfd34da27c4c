// Multi-document YAML → validated resources. Shared by the file source and `tollgate validate`, so the
// CLI refuses exactly what the running gateway would refuse, with the same words.
import { parseAllDocuments } from 'yaml';
import { validateManifest, type AnyResource } from '@tollgate/crds';

export type ParseResult = { ok: true; resources: AnyResource[] } | { ok: false; errors: string[] };

export function parseManifests(text: string, source: string): ParseResult {
  const errors: string[] = [];
  const resources: AnyResource[] = [];
  const seen = new Map<string, number>();
  const documents = parseAllDocuments(text, { prettyErrors: true });
  if (!Array.isArray(documents)) return { ok: true, resources };
  documents.forEach((document, index) => {
    const line = document.range ? lineOf(text, document.range[0]) : 1;
    const where = `${source}: document ${index + 1} (line ${line})`;
    if (document.errors.length > 0) {
      for (const error of document.errors) errors.push(`${where}: YAML syntax: ${error.message.split('\n')[0]}`);
      return;
    }
    const value = document.toJS();
    if (value === null || value === undefined) return; // an empty document, e.g. a trailing `---`
    const result = validateManifest(value);
    const label = describeDocument(value);
    if (!result.ok) {
      for (const problem of result.problems) errors.push(`${where}${label}: ${problem.field} ${problem.message}`);
      return;
    }
    const id = `${result.resource.kind}/${result.resource.metadata.name}`;
    const first = seen.get(id);
    if (first !== undefined) {
      errors.push(`${where}${label}: metadata.name duplicates document ${first} (${id})`);
      return;
    }
    seen.set(id, index + 1);
    resources.push(result.resource);
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, resources };
}

function describeDocument(value: unknown): string {
  if (!value || typeof value !== 'object') return '';
  const { kind, metadata } = value as { kind?: unknown; metadata?: { name?: unknown } };
  const name = metadata && typeof metadata === 'object' ? metadata.name : undefined;
  return typeof kind === 'string' ? ` ${kind}${typeof name === 'string' ? ` ${name}` : ''}` : '';
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  // A document's range starts after its `---` marker line; report the first content line.
  while (offset < text.length && (text[offset] === '\n' || text[offset] === '\r')) {
    if (text[offset] === '\n') line++;
    offset++;
  }
  return line;
}
