import { describe, expect, it } from 'vitest';
import { parseManifests } from './manifests.ts';

const account = (name: string, extra = '') => `apiVersion: tollgate.dev/v1alpha1\nkind: Account\nmetadata:\n  name: ${name}\nspec: {${extra}}\n`;

describe('parseManifests', () => {
  it('reads every document, skipping blank and comment-only stretches and a trailing marker', () => {
    const text = `# resources for tests\n---\n${account('a')}---\n\n# just a comment\n---\n${account('b')}...\n---\n${account('c')}---\n`;
    const result = parseManifests(text, 'f.yaml');
    expect(result.ok && result.resources.map((r) => r.metadata.name)).toEqual(['a', 'b', 'c']);
  });

  it('names the document and its first content line in errors', () => {
    const text = `---\n${account('a')}---\n\n${account('b', 'plan: 7')}---\nkind: [unclosed\n`;
    const result = parseManifests(text, 'f.yaml');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors[0]).toMatch(/^f\.yaml: document 2 \(line 9\) Account b: spec\.plan /);
    expect(result.errors[1]).toMatch(/^f\.yaml: document 3 \(line 15\): YAML syntax: .*\(line 1[5-7]\)/);
  });

  it('keeps YAML 1.2 core meanings: an unquoted timestamp stays the string the schema expects', () => {
    const key = `apiVersion: tollgate.dev/v1alpha1\nkind: ApiKey\nmetadata: { name: k }\nspec:\n  account: a\n  keyHash: "sha256:${'a'.repeat(64)}"\n  expiresAt: 2027-01-01T00:00:00Z\n`;
    const result = parseManifests(`${account('a')}--- ${'\n'}${key}`, 'f.yaml');
    expect(result.ok && result.resources[1]).toMatchObject({ spec: { expiresAt: '2027-01-01T00:00:00Z' } });
  });

  it('refuses a duplicate name and a duplicate key in one mapping', () => {
    const duplicate = parseManifests(`${account('a')}---\n${account('a')}`, 'f.yaml');
    expect(!duplicate.ok && duplicate.errors[0]).toMatch(/document 2 .* duplicates document 1/);
    const duplicateKey = parseManifests(`${account('a')}kind: Account\n`, 'f.yaml');
    expect(!duplicateKey.ok && duplicateKey.errors[0]).toMatch(/YAML syntax: duplicated mapping key/);
  });
});
