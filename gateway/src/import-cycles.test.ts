// The gateway's modules form no import cycle (type-only imports count: a cycle of types is still a
// knot a reader has to untie), and nothing below routes/ imports Koa.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.dirname(new URL(import.meta.url).pathname);
const IMPORT = /^(?:import|export)[^'"]*?from '([^']+)'/gm;

function modules(): Map<string, { text: string; local: string[] }> {
  const found = new Map<string, { text: string; local: string[] }>();
  for (const entry of readdirSync(ROOT, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    const file = path.relative(ROOT, path.join(entry.parentPath, entry.name));
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const local = [...text.matchAll(IMPORT)].map((m) => m[1]).filter((spec) => spec.startsWith('.')).map((spec) => path.normalize(path.join(path.dirname(file), spec)));
    found.set(file, { text, local });
  }
  return found;
}

describe('module structure', () => {
  it('has no import cycle', () => {
    const graph = modules();
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (node: string, stack: string[]) => {
      state.set(node, 'open');
      stack.push(node);
      for (const next of graph.get(node)?.local ?? []) {
        if (!graph.has(next)) continue;
        if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].join(' → '));
        else if (!state.has(next)) visit(next, stack);
      }
      stack.pop();
      state.set(node, 'done');
    };
    for (const node of graph.keys()) if (!state.has(node)) visit(node, []);
    expect(cycles).toEqual([]);
  });

  it('keeps Koa out of everything below routes/', () => {
    // The service layers, and the parts of http/ they use (form parsing, body budgets): those take
    // plain Node requests and responses; the Koa context is adapted at the edge (http/, routes/).
    const koaFree = /^(exchange|limits|upstream|storage|service-test|telemetry|resources|console)\/|^http\/(multipart|body-policy|errors)\.ts$/;
    const offenders = [...modules()].filter(([file, { text }]) => koaFree.test(file) && /from 'koa'|from '@koa\/|import\('koa'\)/.test(text)).map(([file]) => file);
    expect(offenders).toEqual([]);
  });
});
