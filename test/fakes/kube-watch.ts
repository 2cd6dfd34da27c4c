// Watches in the fake Kubernetes API server, as kube-apiserver streams them: newline-delimited JSON
// events, replayed from a resourceVersion out of the bounded history (ERROR 410 as the only event
// once it is gone), the current state as ADDED when no resourceVersion is given, ADDED/DELETED when
// an object enters or leaves the selectors, one-row Tables when kubectl get --watch asks, bookmarks
// (sent by the server object), timeoutSeconds.
import type { ServerResponse } from 'node:http';
import { eventFromCore, isEventsView, type EventsView } from './kube-events.ts';
import { selectorOf } from './kube-http.ts';
import { apiVersionOf, type ResourceType } from './kube-resources.ts';
import type { KubeStorage } from './kube-storage.ts';
import { toTable, wantsTable } from './kube-table.ts';
import { ApiError, type KubeObject, type StoredEvent } from './kube-types.ts';

export interface OpenWatch {
  response: ServerResponse;
  bookmarks: boolean;
  resource: ResourceType;
}

/** Starts streaming; null when the stream ended at once (410). */
export function openWatch(res: ServerResponse, sources: { storage: KubeStorage; events: EventsView }, resource: ResourceType, namespace: string | undefined, params: URLSearchParams, accept: string | undefined): OpenWatch | null {
  const selector = selectorOf(params, resource);
  const from = params.get('resourceVersion');
  let replay: StoredEvent[] = [];
  if (from && from !== '0') {
    if (!/^\d+$/.test(from)) throw new ApiError(400, 'BadRequest', `invalid resource version: ${from}`);
    try {
      replay = sources.storage.eventsSince(Number(from));
    } catch (error) {
      // The real server answers 200 and reports 410 as the stream's only event.
      if (!(error instanceof ApiError)) throw error;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ERROR', object: error.toStatus() })}\n`);
      return null;
    }
  }
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  // kubectl get --watch asks for Tables: each event then carries a one-row Table.
  const tables = wantsTable(accept);
  const write = (type: string, object: KubeObject) => {
    const body = tables ? toTable(resource, [object], { resourceVersion: object.metadata.resourceVersion }, params.get('includeObject')) : object;
    res.write(`${JSON.stringify({ type, object: body })}\n`);
  };
  const view = isEventsView(resource);
  if (!from || from === '0') {
    // No resourceVersion (or "0"): the current state as synthetic ADDED events, then changes.
    for (const object of (view ? sources.events : sources.storage).list(resource, namespace, selector)) write('ADDED', { ...object, apiVersion: apiVersionOf(resource), kind: resource.kind });
  }
  const stored = view ? sources.events.core : resource;
  const deliver = (event: StoredEvent) => {
    if (event.resource !== stored || (namespace !== undefined && event.namespace !== namespace)) return;
    const object = view ? eventFromCore(event.object) : event.object;
    const previous = event.previous && view ? eventFromCore(event.previous) : event.previous;
    const now = selector(object);
    const before = previous !== null && selector(previous);
    if (event.type === 'ADDED' && now) write('ADDED', object);
    else if (event.type === 'DELETED' && (now || before)) write('DELETED', object);
    else if (event.type === 'MODIFIED') {
      if (now && before) write('MODIFIED', object);
      else if (now) write('ADDED', object);
      else if (before) write('DELETED', object);
    }
  };
  // Replay and subscribe in one synchronous step, so no event falls between them.
  for (const event of replay) deliver(event);
  const unsubscribe = sources.storage.subscribe(deliver);
  const watch: OpenWatch = { response: res, bookmarks: params.get('allowWatchBookmarks') === 'true', resource };
  const timeoutSeconds = Number(params.get('timeoutSeconds') ?? 0);
  const timer = timeoutSeconds > 0 ? setTimeout(() => res.end(), timeoutSeconds * 1000) : null;
  res.once('close', () => {
    unsubscribe();
    if (timer) clearTimeout(timer);
  });
  return watch;
}
