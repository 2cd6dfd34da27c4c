// What every reconciler gets and gives. A reconciler reads the informers' view (never the API), the
// probe results and the usage roll-up, and says what the object's status should be and which other
// objects it read (so a change there queues it again); the controller writes the difference.
import type { ConditionInput } from '../conditions.ts';
import type { Informers, Obj, ObjectKey } from '../informers.ts';
import type { ProbeResult } from '../probes.ts';
import type { UsageFigures } from '../usage.ts';

export interface ReconcileContext {
  informers: Informers;
  probe(upstream: string): ProbeResult | undefined;
  usage(): UsageFigures | null;
  now(): Date;
}

export interface Evaluation {
  /** Status fields besides conditions and observedGeneration; undefined values are removed. */
  fields: Record<string, unknown>;
  /** Ready first, then the kind's own conditions. */
  conditions: ConditionInput[];
  /** Every object read, present or not: a dangling reference heals when its target appears. */
  refs: ObjectKey[];
  /** Call again at this delay even if nothing changes (an expiry, a month's end). */
  requeueAfterMs?: number;
}

export type Evaluate = (object: Obj, context: ReconcileContext) => Evaluation;
