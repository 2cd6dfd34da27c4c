// Optional batched operations of a LimitStore: a request's admission, and its token reservation,
// each as one call. A store across the network (Redis) offers them so that each is one round trip
// instead of one per limit; the limiter uses them when present and the single calls otherwise.
// Both are all or nothing: on a refusal nothing stays taken.
import type { LimitStore } from './limit-store.ts';
import type { SlotRef } from './sliding-window.ts';

export interface AdmissionBatch {
  /** Concurrency slots to take: store key and maximum. */
  slots: Array<{ key: string; max: number }>;
  /** Per-minute request windows to count one request in. */
  requests: Array<{ key: string; limit: number }>;
  /** Token windows to report (headers only). */
  peeks: string[];
}

export interface WindowState {
  ref: SlotRef;
  used: number;
  resetMs: number;
}

export type AdmissionOutcome =
  | { admitted: true; requests: WindowState[]; peeks: Array<{ used: number; resetMs: number }> }
  | { admitted: false; slot: { index: number; open: number } }
  | { admitted: false; request: { index: number; used: number; waitMs: number; resetMs: number } };

export interface ReservationBatch {
  amount: number;
  /** Per-minute token windows. */
  windows: Array<{ key: string; limit: number }>;
  /** Monthly budgets: scope id and limit, all in `period`. */
  budgets: Array<{ key: string; limit: number }>;
  period: string;
}

export type ReservationOutcome =
  | { granted: true; windows: WindowState[] }
  | { granted: false; window: { index: number; used: number; waitMs: number; resetMs: number } }
  | { granted: false; budget: { index: number; used: number } };

export interface BatchLimitStore extends LimitStore {
  admitBatch(batch: AdmissionBatch, now: number): Promise<AdmissionOutcome>;
  reserveBatch(batch: ReservationBatch, now: number): Promise<ReservationOutcome>;
}

export function isBatchStore(store: LimitStore): store is BatchLimitStore {
  return typeof (store as Partial<BatchLimitStore>).admitBatch === 'function';
}
