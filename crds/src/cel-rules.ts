// The cross-field rules of the schemas (`x-kubernetes-validations`, CEL), evaluated here too, so the
// file source refuses what a cluster's API server refuses at `kubectl apply` — one rule, both
// sources. @marcbachmann/cel-js is a dependency-free CEL evaluator; rules are parsed once.
import { Environment } from '@marcbachmann/cel-js';
import type { TSchema } from '@sinclair/typebox';
import { CEL, type CelRule } from './schemas.ts';

export interface RuleProblem {
  field: string;
  message: string;
}

const environment = new Environment({ unlistedVariablesAreDyn: true, homogeneousAggregateLiterals: false });
const programs = new Map<string, ReturnType<typeof environment.parse>>();

function holds(rule: string, self: unknown): boolean {
  let program = programs.get(rule);
  if (!program) programs.set(rule, (program = environment.parse(rule)));
  return program({ self }) === true;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Every rule under `schema` that `value` breaks, with the field it points at (`spec.timeouts.connectMs`). */
export function celProblems(schema: TSchema, value: unknown, path: string): RuleProblem[] {
  const problems: RuleProblem[] = [];
  const node = schema as Record<string, any>;
  // Rules that read oldSelf compare with a stored object, which only an API server has.
  for (const { rule, message, fieldPath } of (node[CEL] ?? []) as CelRule[]) {
    if (/\boldSelf\b/.test(rule) || value === undefined) continue;
    if (!holds(rule, value)) problems.push({ field: `${path}${fieldPath ?? ''}`, message });
  }
  if (isObject(value) && node.properties) {
    for (const [name, child] of Object.entries(node.properties as Record<string, TSchema>)) if (value[name] !== undefined) problems.push(...celProblems(child, value[name], `${path}.${name}`));
  }
  if (Array.isArray(value) && node.items) value.forEach((item, i) => problems.push(...celProblems(node.items, item, `${path}[${i}]`)));
  if (Array.isArray(node.anyOf)) for (const branch of node.anyOf) problems.push(...celProblems(branch, value, path));
  return problems;
}
