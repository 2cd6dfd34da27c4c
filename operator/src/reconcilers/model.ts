// Model: do its targets' Upstreams exist (ResolvedRefs), and can any of them serve it now
// (TargetsAvailable: the Upstream is Ready and, when its probe listed models, offers the target's
// model id)? Each target's verdict goes into status.targets, in spec order.
import { condition, findCondition, readyFrom } from '../conditions.ts';
import { keyOf, type Obj } from '../informers.ts';
import type { Evaluation, ReconcileContext } from './types.ts';

export function evaluateModel(model: Obj, context: ReconcileContext): Evaluation {
  const targets = (model.spec?.targets ?? []) as Array<{ upstream: string; model?: string }>;
  const refs = targets.map((t) => keyOf('Upstream', t.upstream));
  const missing: string[] = [];
  let unchecked = 0;
  const statuses = targets.map((target, index) => {
    const wanted = target.model ?? model.metadata.name;
    const upstream = context.informers.get('Upstream', target.upstream);
    if (!upstream) {
      missing.push(`spec.targets[${index}].upstream "${target.upstream}"`);
      return { upstream: target.upstream, model: wanted, available: false, message: `Upstream ${target.upstream} does not exist` };
    }
    const ready = findCondition(upstream.status, 'Ready');
    if (ready?.status !== 'True') {
      if (!ready || ready.status === 'Unknown') unchecked += 1;
      const why = ready ? `${ready.reason}: ${ready.message}` : 'not checked yet';
      return { upstream: target.upstream, model: wanted, available: false, message: `Upstream ${target.upstream} is not ready (${why})` };
    }
    const offered = upstream.status?.models as string[] | undefined;
    if (offered && offered.length > 0 && !offered.includes(wanted)) {
      return { upstream: target.upstream, model: wanted, available: false, message: `Upstream ${target.upstream} does not offer model "${wanted}" (its GET /models lists ${offered.length} others)` };
    }
    return { upstream: target.upstream, model: wanted, available: true };
  });
  const resolved = missing.length === 0
    ? condition('ResolvedRefs', 'True', 'Resolved', `all ${targets.length} target upstream(s) exist`)
    : condition('ResolvedRefs', 'False', 'UpstreamNotFound', `${missing.join(', ')} names no Upstream; create it or fix the target`);
  const available = statuses.filter((s) => s.available);
  const targetsAvailable = available.length > 0
    ? condition('TargetsAvailable', 'True', 'TargetsAvailable', `${available.length} of ${targets.length} target(s) can serve: ${available.map((s) => s.upstream).join(', ')}`)
    : unchecked > 0
      ? condition('TargetsAvailable', 'Unknown', 'TargetsUnchecked', `waiting for the first probe of ${unchecked} target upstream(s). ${statuses.map((s) => s.message).join('; ')}`)
      : condition('TargetsAvailable', 'False', 'NoTargetAvailable', `no target can serve this model; requests for it get 503. ${statuses.map((s) => s.message).join('; ')}`);
  const own = [resolved, targetsAvailable];
  return { fields: { targets: statuses }, conditions: [readyFrom(own, { ResolvedRefs: 'True', TargetsAvailable: 'True' }, targetsAvailable.message), ...own], refs };
}
