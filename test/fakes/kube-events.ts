// events.k8s.io/v1 Events are a second view of core/v1 Events in kube-apiserver: one stored object,
// two shapes. An operator that records through one API shows up in `kubectl describe` (which reads
// core/v1) either way. These convert between the shapes, field by field as the API server's
// conversion does.
import { jsonPatch, mergePatch, type ObjectSelector } from './kube-selectors.ts';
import { ApiError, type DeleteOptions, type KubeObject, type KubeStorage, type PatchRequest, type ResourceType, type WriteOptions } from './kube-storage.ts';

const RENAMES: Array<[events: string, core: string]> = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['reportingController', 'reportingComponent'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
];
const SAME = ['reason', 'type', 'action', 'related', 'reportingInstance', 'eventTime', 'series'];

function convert(object: KubeObject, pairs: Array<[string, string]>, apiVersion: string): KubeObject {
  const out: KubeObject = { apiVersion, kind: 'Event', metadata: structuredClone(object.metadata) };
  for (const [from, to] of pairs) if (object[from] !== undefined) out[to] = structuredClone(object[from]);
  for (const field of SAME) if (object[field] !== undefined) out[field] = structuredClone(object[field]);
  return out;
}

export function eventToCore(object: KubeObject): KubeObject {
  return convert(object, RENAMES, 'v1');
}

export function eventFromCore(object: KubeObject): KubeObject {
  return convert(object, RENAMES.map(([events, core]) => [core, events]), 'events.k8s.io/v1');
}


export const isEventsView = (type: ResourceType) => type.group === 'events.k8s.io' && type.kind === 'Event';

/** The storage operations for events.k8s.io/v1 Events, carried out on the core/v1 objects. */
export class EventsView {
  #storage: KubeStorage;
  readonly core: ResourceType;

  constructor(storage: KubeStorage) {
    this.#storage = storage;
    this.core = storage.typeOf('v1', 'Event');
  }

  list(_type: ResourceType, namespace: string | undefined, selector: ObjectSelector = () => true): KubeObject[] {
    return this.#storage.list(this.core, namespace).map(eventFromCore).filter(selector);
  }

  get(_type: ResourceType, namespace: string, name: string): KubeObject {
    return eventFromCore(this.#storage.get(this.core, namespace, name));
  }

  create(_type: ResourceType, namespace: string, body: KubeObject, options: WriteOptions = {}): KubeObject {
    return eventFromCore(this.#storage.create(this.core, namespace, eventToCore(checked(body)), options));
  }

  replace(_type: ResourceType, namespace: string, name: string, body: KubeObject, _subresource?: 'status', options: WriteOptions = {}): KubeObject {
    return eventFromCore(this.#storage.replace(this.core, namespace, name, eventToCore(checked(body)), undefined, options));
  }

  patch(type: ResourceType, namespace: string, name: string, patch: PatchRequest, _subresource?: 'status', options: WriteOptions = {}): KubeObject {
    const current = this.get(type, namespace, name);
    const mediaType = patch.contentType.split(';')[0].trim();
    let next: KubeObject;
    if (mediaType === 'application/merge-patch+json' || mediaType === 'application/strategic-merge-patch+json') next = mergePatch(current, patch.body) as KubeObject;
    else if (mediaType === 'application/json-patch+json') next = jsonPatch(current, patch.body as never) as KubeObject;
    else throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format: ${mediaType}`);
    const requested = (patch.body as KubeObject | null)?.metadata?.resourceVersion;
    next.metadata.resourceVersion = typeof requested === 'string' ? requested : current.metadata.resourceVersion;
    return this.replace(type, namespace, name, next, undefined, options);
  }

  delete(_type: ResourceType, namespace: string, name: string, options: DeleteOptions = {}): KubeObject {
    return eventFromCore(this.#storage.delete(this.core, namespace, name, options));
  }
}

function checked(body: KubeObject): KubeObject {
  if (body?.apiVersion !== undefined && body.apiVersion !== 'events.k8s.io/v1') throw new ApiError(400, 'BadRequest', `the API version in the data (${body.apiVersion}) does not match the expected API version (events.k8s.io/v1)`);
  if (!body?.metadata) throw new ApiError(400, 'BadRequest', 'the object has no metadata');
  return body;
}
