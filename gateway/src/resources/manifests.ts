// Multi-document YAML → validated resources. Shared by the file source and `tollgate validate`, so the
// CLI refuses exactly what the running gateway would refuse, with the same words.
//
// Parsed with js-yaml, one document at a time: a file of 100,000 keys parses in under a second where
// the `yaml` package (kept for comment-preserving edits) takes ten. The core schema keeps YAML 1.2
// meanings: an unquoted date stays a string, as the schemas expect.
import { CORE_SCHEMA, loadAll } from 'js-yaml';
import { validateManifest, type AnyResource } from '@tollgate/crds';

export type ParseResult = { ok: true; resources: AnyResource[] } | { ok: false; errors: string[] };

interface DocumentText {
  text: string;
  /** 1-based line of the document's first content line. */
  line: number;
}

export function parseManifests(text: string, source: string): ParseResult {
  const errors: string[] = [];
  const resources: AnyResource[] = [];
  const seen = new Map<string, number>();
  splitDocuments(text).forEach((document, index) => {
    const where = `${source}: document ${index + 1} (line ${document.line})`;
    let value: unknown;
    try {
      const values = loadAll(document.text, { schema: CORE_SCHEMA });
      if (values.length > 1) throw new Error('more than one document without a --- between them');
      value = values[0];
    } catch (error) {
      errors.push(`${where}: YAML syntax: ${syntaxMessage(error, document.line)}`);
      return;
    }
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

/** A `---` (or `...`) at the start of a line always separates documents in YAML, even inside a block scalar. */
const MARKER = /^(?:---|\.\.\.)(?=[ \t\r\n]|$)/gm;
const BLANK = /^(?:[ \t\r\n]|#[^\n]*)*$/;

/** The documents of a stream, with where each starts; blank or comment-only stretches are not documents. */
function splitDocuments(text: string): DocumentText[] {
  const documents: DocumentText[] = [];
  let start = 0;
  let line = 1;
  let counted = 0;
  const push = (end: number) => {
    const body = text.slice(start, end);
    line += countNewlines(text, counted, start);
    counted = start;
    if (BLANK.test(body)) return;
    const leading = /^(?:[ \t]*\r?\n)*/.exec(body)![0];
    documents.push({ text: body, line: line + countNewlines(leading, 0, leading.length) });
  };
  for (const match of text.matchAll(MARKER)) {
    push(match.index);
    start = match.index + 3;
  }
  push(text.length);
  return documents;
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

function syntaxMessage(error: unknown, firstLine: number): string {
  const e = error as { reason?: string; mark?: { line: number }; message?: string };
  if (e.reason && e.mark) return `${e.reason} (line ${firstLine + e.mark.line})`;
  return (e.reason ?? e.message ?? String(error)).split('\n')[0];
}

function describeDocument(value: unknown): string {
  if (!value || typeof value !== 'object') return '';
  const { kind, metadata } = value as { kind?: unknown; metadata?: { name?: unknown } };
  const name = metadata && typeof metadata === 'object' ? metadata.name : undefined;
  return typeof kind === 'string' ? ` ${kind}${typeof name === 'string' ? ` ${name}` : ''}` : '';
}

