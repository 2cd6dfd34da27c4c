// Plan: does every entry of spec.models name a Model (or match one, for a glob)? `service-test` is
// built in. A dangling entry is reported here, on the Plan; it heals when the Model is created.
import { condition, readyFrom } from '../conditions.ts';
import { keyOf, type Obj } from '../informers.ts';
import type { Evaluation, ReconcileContext } from './types.ts';

const SERVICE_TEST = 'service-test';
const isGlob = (pattern: string) => /[*?]/.test(pattern);

function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
}

/** A reference to every Model at once, for Plans with globs. */
export const ANY_MODEL = keyOf('Model', '*');

export function evaluatePlan(plan: Obj, context: ReconcileContext): Evaluation {
  const entries = (plan.spec?.models ?? []) as string[];
  const models = context.informers.list('Model').map((m) => m.metadata.name);
  const refs: string[] = [];
  const problems: string[] = [];
  const served = new Set<string>();
  for (const entry of entries) {
    if (isGlob(entry)) {
      refs.push(ANY_MODEL);
      const pattern = globToRegExp(entry);
      const matches = [...models, SERVICE_TEST].filter((m) => pattern.test(m));
      if (matches.length === 0) problems.push(`"${entry}" matches no Model`);
      for (const m of matches) served.add(m);
      continue;
    }
    if (entry === SERVICE_TEST) {
      served.add(entry);
      continue;
    }
    refs.push(keyOf('Model', entry));
    if (context.informers.get('Model', entry)) served.add(entry);
    else problems.push(`Model "${entry}" does not exist`);
  }
  const list = [...served].sort();
  const resolved = problems.length === 0
    ? condition('ResolvedRefs', 'True', 'Resolved', `${list.length} model(s): ${list.join(', ') || '(none)'}`)
    : condition('ResolvedRefs', 'False', 'ModelNotFound', `spec.models: ${problems.join('; ')}; create the Model or remove the entry (accounts on this plan see only the models that exist)`);
  return { fields: {}, conditions: [readyFrom([resolved], { ResolvedRefs: 'True' }, resolved.message), resolved], refs };
}
