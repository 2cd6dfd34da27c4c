// Kubernetes Events (core/v1) for transitions a person wants to see in `kubectl describe` and
// `kubectl get events`: key issued, key expired, upstream unreachable, budget exhausted. An Event
// failing to be written is logged and dropped: it must never hold up a reconcile.
import type { Logger } from 'pino';
import type { Obj } from './informers.ts';
import { isoSeconds, microTime, paths, type KubeApi } from './kube-api.ts';
import { API_VERSION } from '@tollgate/crds';
import { randomBytes } from 'node:crypto';

export interface EventInput {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export class EventRecorder {
  #api: KubeApi;
  #log: Logger;
  #component: string;
  #instance: string;

  constructor(api: KubeApi, log: Logger, instance: string) {
    this.#api = api;
    this.#log = log;
    this.#component = 'tollgate-operator';
    this.#instance = instance;
  }

  /** `signal` abandons the write (leadership lost, shutdown); a failed write is logged, never thrown. */
  async record(kind: string, object: Obj, event: EventInput, signal?: AbortSignal): Promise<void> {
    const now = new Date();
    const name = `${object.metadata.name}.${now.getTime().toString(16)}${randomBytes(3).toString('hex')}`;
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: this.#api.namespace },
      involvedObject: { apiVersion: API_VERSION, kind, name: object.metadata.name, namespace: this.#api.namespace, uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion },
      type: event.type,
      reason: event.reason,
      message: event.message,
      source: { component: this.#component, host: this.#instance },
      reportingComponent: this.#component,
      reportingInstance: this.#instance,
      firstTimestamp: isoSeconds(now),
      lastTimestamp: isoSeconds(now),
      eventTime: microTime(now),
      action: event.reason,
      count: 1,
    };
    try {
      await this.#api.request('POST', paths(this.#api.namespace).events(), body, undefined, signal);
      this.#log.info({ kind, name: object.metadata.name, reason: event.reason }, `event ${event.reason}: ${event.message}`);
    } catch (error) {
      if (signal?.aborted) return;
      this.#log.warn({ kind, name: object.metadata.name, reason: event.reason, err: (error as Error).message }, 'could not record a Kubernetes Event');
    }
  }
}
