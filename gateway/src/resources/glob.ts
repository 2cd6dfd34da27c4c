// Plan.spec.models entries are names or shell-style globs (`gpt-4o*`, `llama-?-8b`). Compiled once per
// pattern and cached: plans are few, patterns repeat across snapshots.
const compiled = new Map<string, RegExp>();

function toRegExp(pattern: string): RegExp {
  let regexp = compiled.get(pattern);
  if (!regexp) {
    const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    regexp = new RegExp(`^${source}$`);
    compiled.set(pattern, regexp);
  }
  return regexp;
}

export function matchesAny(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => pattern === name || (/[*?]/.test(pattern) && toRegExp(pattern).test(name)));
}
