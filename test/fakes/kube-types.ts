// The shapes the fake Kubernetes API server stores and answers with, and its Status error.
import type { ManagedFieldsEntry } from './kube-fields.ts';
import type { ResourceType } from './kube-resources.ts';

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }>;
  managedFields?: ManagedFieldsEntry[];
  [field: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: any;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  revision: number;
  type: EventType;
  resource: ResourceType;
  namespace: string;
  object: KubeObject;
  /** The object before this event, so a selector watch can turn a label change into ADDED/DELETED. */
  previous: KubeObject | null;
}

/** A failure the real API server answers with a Status object. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  toStatus() {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, ...(this.details ? { details: this.details } : {}), code: this.code };
  }
}

/** How a write is made: who makes it (managedFields), what happens to unknown fields, whether it is kept. */
export interface WriteOptions {
  fieldManager?: string;
  /** Strict: unknown fields are a 400; Warn (the default): dropped with a warning; Ignore: dropped. */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  dryRun?: boolean;
  /** Warnings for the Warning response header. */
  warnings?: string[];
  force?: boolean;
  /** Internal: the write already carries its managedFields (server-side apply computed them). */
  managedFieldsSet?: boolean;
}

export interface DeleteOptions {
  preconditions?: { resourceVersion?: string; uid?: string };
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  dryRun?: boolean;
}

export interface PatchRequest {
  contentType: string;
  body: unknown;
}
