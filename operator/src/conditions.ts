// status.conditions in the Kubernetes API conventions (metav1.Condition): one entry per type, with
// lastTransitionTime moved only when the status itself changes, observedGeneration on each, and a
// Ready condition that sums the others up. The status is written only when it differs from what the
// object already carries, so a reconcile that finds nothing new makes no write.
import type { Condition } from '@tollgate/crds';
import { isoSeconds } from './kube-api.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

export const condition = (type: string, status: ConditionStatus, reason: string, message: string): ConditionInput => ({ type, status, reason, message });

/** The next conditions list: inputs in order, keeping each type's lastTransitionTime while its status holds. */
export function nextConditions(previous: readonly Condition[] | undefined, inputs: readonly ConditionInput[], generation: number, now: Date): Condition[] {
  const before = new Map((previous ?? []).map((c) => [c.type, c]));
  return inputs.map((input) => {
    const old = before.get(input.type);
    const lastTransitionTime = old && old.status === input.status ? old.lastTransitionTime : isoSeconds(now);
    return { type: input.type, status: input.status, observedGeneration: generation, lastTransitionTime, reason: input.reason, message: truncate(input.message) };
  });
}

/**
 * Ready: True when every listed condition is in its good state, else False with the first failing
 * condition's reason and message (Unknown when the first problem is only unknown).
 */
export function readyFrom(inputs: readonly ConditionInput[], good: Record<string, ConditionStatus>, readyMessage: string): ConditionInput {
  for (const input of inputs) {
    const want = good[input.type];
    if (want === undefined || input.status === want) continue;
    return condition('Ready', input.status === 'Unknown' ? 'Unknown' : 'False', input.reason, input.message);
  }
  return condition('Ready', 'True', 'Ready', readyMessage);
}

export function findCondition(status: { conditions?: Condition[] } | undefined, type: string): Condition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

/** JSON with object keys sorted, so two statuses compare equal whatever order their fields came in. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v));
}

function truncate(message: string): string {
  return message.length > 2000 ? `${message.slice(0, 1997)}...` : message;
}
