// A fake Kubernetes API server for tests and local runs: a real HTTP server speaking the REST, watch,
// discovery and OpenAPI protocol the way kube-apiserver does, faithfully enough that the real kubectl
// works against it (apply client- and server-side, get with printer columns, describe, patch,
// delete with garbage collection, wait). It serves the built-in kinds Tollgate touches and
// CustomResourceDefinitions (kube-crds.ts), which it starts with — the chart's, unless told otherwise
// (`crds: []` starts empty, as a fresh cluster). Semantics live in kube-storage.ts; this file is routing, Status
// errors, list (pagination, label and field selectors, Tables) and watch: chunked newline-delimited
// JSON events, replay from a resourceVersion out of a bounded history, ERROR 410 when that history is
// gone, bookmarks, ADDED/DELETED on selector transitions, timeoutSeconds. Outages come two ways:
// 503 answers (setAvailable) and refused connections (stopListening/resumeListening on the same
// port). Tests also reach in directly and read `requests` to assert what a client did.
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { discovery, openApiV3Document, openApiV3Index, VERSION_INFO } from './kube-discovery.ts';
import { EventsView, isEventsView } from './kube-events.ts';
import { asJson, decodeContinue, deleteOptions, encodeContinue, readBody, selectorOf, send, writeOptions } from './kube-http.ts';
import { CRD_TYPE, CrdController } from './kube-crds.ts';
import { BUILTIN_TYPES, loadCrds, type JsonSchema } from './kube-resources.ts';
import { ApiError, apiVersionOf, KubeStorage, type DeleteOptions, type KubeObject, type ResourceType } from './kube-storage.ts';
import { toTable, wantsTable } from './kube-table.ts';
import { openWatch, type OpenWatch } from './kube-watch.ts';

export type { KubeObject } from './kube-storage.ts';

export interface FakeKubeOptions {
  /** Events retained for watches; older resourceVersions get 410 Gone. */
  historyLimit?: number;
  /** When set, requests must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Send a BOOKMARK this often to watches that allow them (0: only on bookmark()). */
  bookmarkIntervalMs?: number;
  /** CustomResourceDefinitions installed (and established) at start; default: the chart's
   *  (charts/tollgate/crds). [] starts empty, like a fresh cluster: CRDs are then created through the API. */
  crds?: JsonSchema[];
  /** Port to listen on; default 0 (any free port). */
  port?: number;
}

export interface RecordedKubeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
}

interface Route {
  resource: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: 'status' | undefined;
}

interface ListSnapshot {
  items: KubeObject[];
  resourceVersion: string;
}

/** Continue tokens point into snapshots kept this long, as etcd keeps a compacted revision. */
const SNAPSHOTS_KEPT = 64;

export class FakeKubeApiServer {
  readonly storage: KubeStorage;
  readonly requests: RecordedKubeRequest[] = [];
  url = '';
  #port: number;
  #server = createServer((req, res) => void this.#handle(req, res));
  #watches = new Set<OpenWatch>();
  #token: string | undefined;
  #unavailable = false;
  /** Requests it accepts and never answers (a stalled API server), by method and path. */
  #stalls: ((method: string, path: string) => boolean) | null = null;
  #held = new Set<ServerResponse>();
  #bookmarkTimer: NodeJS.Timeout | null = null;
  #snapshots = new Map<string, ListSnapshot>();
  #snapshotCounter = 0;
  /** events.k8s.io/v1 Events are the core/v1 Events in another shape, as in kube-apiserver. */
  #events: EventsView;

  constructor(options: FakeKubeOptions = {}) {
    this.storage = new KubeStorage(options.historyLimit, [...BUILTIN_TYPES, CRD_TYPE]);
    const crds = new CrdController(this.storage, (types) => this.#endWatches(types));
    const preload = options.crds ?? loadCrds();
    for (const crd of preload) crds.install(crd);
    // Installed before anyone watched: no history of it to replay, as on a cluster running a while.
    if (preload.length > 0) this.storage.compact();
    this.#token = options.token;
    this.#port = options.port ?? 0;
    this.#events = new EventsView(this.storage);
    if (options.bookmarkIntervalMs) {
      this.#bookmarkTimer = setInterval(() => this.bookmark(), options.bookmarkIntervalMs);
      this.#bookmarkTimer.unref();
    }
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.#port}`;
    return this;
  }

  get port(): number {
    return this.#port;
  }

  get listening(): boolean {
    return this.#server.listening;
  }

  /** An outage clients see as refused connections: the port closes and open connections are cut. */
  async stopListening(): Promise<void> {
    this.dropWatches();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** Ends an outage: listens again on the same port (and keeps every object). */
  async resumeListening(): Promise<void> {
    if (!this.#server.listening) await this.listen();
  }

  async close(): Promise<void> {
    if (this.#bookmarkTimer) clearInterval(this.#bookmarkTimer);
    if (this.#server.listening) await this.stopListening();
  }

  /** A kubeconfig (JSON is YAML) whose current context points at this server. client-node refuses plain
   *  HTTP unless TLS verification is off, so the cluster says so: there is no TLS to verify. */
  kubeconfig(namespace = 'default'): string {
    const user = this.#token ? { token: this.#token } : {};
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'fake', user }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', namespace } }],
      'current-context': 'fake',
    });
  }

  async writeKubeconfig(file: string, namespace = 'default'): Promise<void> {
    await writeFile(file, `${this.kubeconfig(namespace)}\n`, { mode: 0o600 });
  }

  // ---- test-facing operations, through the same storage semantics as HTTP ----

  create(object: KubeObject): KubeObject {
    const [type, namespace] = this.#typeOf(object);
    return this.storage.create(type, namespace, object, { fieldManager: 'test' });
  }

  /** Replaces the object, taking its current resourceVersion unless the caller set one. */
  replace(object: KubeObject): KubeObject {
    const [type, namespace] = this.#typeOf(object);
    const current = this.storage.get(type, namespace, object.metadata.name!);
    const body = { ...object, metadata: { ...object.metadata, resourceVersion: object.metadata.resourceVersion ?? current.metadata.resourceVersion } };
    return this.storage.replace(type, namespace, object.metadata.name!, body, undefined, { fieldManager: 'test' });
  }

  /** Creates the object, or replaces it when it exists (kubectl apply, roughly). */
  apply(object: KubeObject): KubeObject {
    const [type, namespace] = this.#typeOf(object);
    try {
      this.storage.get(type, namespace, object.metadata.name!);
    } catch {
      return this.create(object);
    }
    return this.replace(object);
  }

  get(apiVersion: string, kind: string, namespace: string, name: string): KubeObject {
    const [type] = this.#typeOf({ apiVersion, kind, metadata: { namespace } });
    return this.storage.get(type, namespace, name);
  }

  mergePatch(apiVersion: string, kind: string, namespace: string, name: string, patch: unknown, subresource?: 'status'): KubeObject {
    const [type] = this.#typeOf({ apiVersion, kind, metadata: { namespace } });
    return this.storage.patch(type, namespace, name, { contentType: 'application/merge-patch+json', body: patch }, subresource, { fieldManager: 'test' });
  }

  delete(apiVersion: string, kind: string, namespace: string, name: string, options: DeleteOptions = {}): KubeObject {
    const [type] = this.#typeOf({ apiVersion, kind, metadata: { namespace } });
    return this.storage.delete(type, namespace, name, options);
  }

  /** Forgets the retained event history: any watch from an older resourceVersion now gets 410 Gone. */
  compact(): void {
    this.storage.compact();
    this.#snapshots.clear();
  }

  /** Cuts every open watch connection, as an API server restart does. */
  dropWatches(): void {
    for (const watch of this.#watches) watch.response.destroy();
    this.#watches.clear();
  }

  /**
   * A stalled API server: the requests that match (every one by default) are accepted, read no
   * further and never answered. Watches already open carry on.
   */
  stall(matches: (method: string, path: string) => boolean = () => true): void {
    this.#stalls = matches;
  }

  /** Ends a stall: the held requests are cut (their connections reset) and new ones answered. */
  unstall(): void {
    this.#stalls = null;
    for (const res of this.#held) res.destroy();
    this.#held.clear();
  }

  /** Requests held unanswered by a stall right now. */
  get heldRequests(): number {
    return this.#held.size;
  }

  /** While unavailable every request is answered 503, as during a control-plane outage. */
  setAvailable(available: boolean): void {
    this.#unavailable = !available;
  }

  get openWatches(): number {
    return this.#watches.size;
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that allowed bookmarks. */
  bookmark(): void {
    for (const watch of this.#watches) {
      if (!watch.bookmarks) continue;
      const object = { apiVersion: apiVersionOf(watch.resource), kind: watch.resource.kind, metadata: { resourceVersion: String(this.storage.revision) } };
      watch.response.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
    }
  }

  #typeOf(object: { apiVersion?: string; kind?: string; metadata: { namespace?: string } }): [ResourceType, string] {
    const type = this.storage.types.find((t) => apiVersionOf(t) === object.apiVersion && t.kind === object.kind);
    if (!type) throw new Error(`the fake API server does not serve ${object.apiVersion} ${object.kind}`);
    return [type, type.namespaced ? (object.metadata.namespace ?? 'default') : ''];
  }

  /** A kind no longer served (its CRD deleted or changed) ends its watches, as kube-apiserver does. */
  #endWatches(types: ResourceType[]): void {
    for (const watch of this.#watches) {
      if (!types.includes(watch.resource)) continue;
      watch.response.end();
      this.#watches.delete(watch);
    }
  }

  // ---- HTTP ----

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const contentType = req.headers['content-type'];
    this.requests.push({ method: req.method!, path: url.pathname, query, ...(contentType ? { contentType } : {}) });
    if (this.#stalls?.(req.method!, url.pathname)) {
      this.#held.add(res);
      res.once('close', () => this.#held.delete(res));
      return;
    }
    try {
      if (this.#unavailable) throw new ApiError(503, 'ServiceUnavailable', 'the API server is shutting down or unavailable');
      if (this.#token !== undefined && req.headers.authorization !== `Bearer ${this.#token}`) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      const method = req.method!;
      if (method === 'GET' && this.#serveMeta(parts, req, res, url.searchParams)) return;
      const route = this.#route(parts);
      const body = await readBody(req);
      const { resource, namespace, name, subresource } = route;
      const store = isEventsView(resource) ? this.#events : this.storage;
      const warnings: string[] = [];
      const write = writeOptions(url.searchParams, req, warnings);
      const answer = (status: number, object: unknown) => send(res, status, object, warnings);
      if (name === undefined) {
        if (method === 'GET' && (query.watch === 'true' || query.watch === '1')) return this.#watch(res, route, url.searchParams, req.headers.accept);
        if (method === 'GET') return answer(200, this.#list(route, url.searchParams, req.headers.accept));
        if (method === 'POST' && namespace !== undefined) return answer(201, store.create(resource, namespace, asJson(body) as KubeObject, write));
      } else if (namespace !== undefined) {
        if (method === 'GET') {
          const object = store.get(resource, namespace, name);
          return answer(200, wantsTable(req.headers.accept) ? toTable(resource, [object], { resourceVersion: object.metadata.resourceVersion }, url.searchParams.get('includeObject')) : object);
        }
        if (method === 'PUT') return answer(200, store.replace(resource, namespace, name, asJson(body) as KubeObject, subresource, write));
        if (method === 'PATCH') {
          const patchType = contentType ?? '';
          const patchBody = patchType.startsWith('application/apply-patch+yaml') ? body : asJson(body);
          // An apply creates what does not exist yet (201), as kube-apiserver does.
          let existed = true;
          try {
            store.get(resource, namespace, name);
          } catch {
            existed = false;
          }
          return answer(existed ? 200 : 201, store.patch(resource, namespace, name, { contentType: patchType, body: patchBody }, subresource, write));
        }
        if (method === 'DELETE' && !subresource) {
          const options = deleteOptions(asJson(body) as Record<string, any> | undefined, url.searchParams);
          return answer(200, store.delete(resource, namespace, name, options));
        }
      }
      throw new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    } catch (error) {
      const failure = error instanceof ApiError ? error : new ApiError(500, 'InternalError', (error as Error).message);
      if (!res.headersSent) send(res, failure.code, failure.toStatus(), []);
      else res.destroy();
    }
  }

  /** /version, discovery and OpenAPI; true when the path was one of those. */
  #serveMeta(parts: string[], req: IncomingMessage, res: ServerResponse, params: URLSearchParams): boolean {
    if (parts.length === 1 && parts[0] === 'version') return (send(res, 200, VERSION_INFO, []), true);
    if (parts[0] === 'openapi' && parts[1] === 'v3') {
      const key = parts.slice(2).join('/');
      const document = key ? openApiV3Document(this.storage.types, key) : openApiV3Index(this.storage.types);
      if (!document) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      // kubectl passes ?hash=...; the document under a hash never changes, so it may be cached for good.
      send(res, 200, document, [], params.has('hash') ? { 'cache-control': 'public, immutable' } : {});
      return true;
    }
    if (parts[0] === 'openapi' && parts[1] === 'v2') {
      // kubectl asks for OpenAPI v2 in protobuf only, which the fake does not speak: 406 sends it to v3.
      throw new ApiError(406, 'NotAcceptable', 'only OpenAPI v3 is served');
    }
    const answer = discovery(this.storage.types, parts, req.headers.accept);
    if (!answer) return false;
    send(res, 200, answer.body, [], answer.contentType ? { 'content-type': answer.contentType } : {});
    return true;
  }

  #route(parts: string[]): Route {
    // /api/v1/... is the core group; /apis/{group}/{version}/... every other group.
    const [group, version, rest] = parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : parts[0] === 'apis' ? [parts[1], parts[2], parts.slice(3)] : [null, null, []];
    let namespace: string | undefined;
    let tail = rest;
    if (tail[0] === 'namespaces' && tail.length >= 3) {
      namespace = tail[1];
      tail = tail.slice(2);
    }
    const [plural, name, subresource, ...extra] = tail;
    const resource = this.storage.types.find((t) => t.group === group && t.version === version && t.plural === plural);
    const validSubresource = subresource === undefined || (subresource === 'status' && resource?.statusSubresource);
    // A namespaced object is named under its namespace; a cluster-scoped one never has a namespace.
    const validScope = resource?.namespaced ? name === undefined || namespace !== undefined : namespace === undefined;
    if (!resource || extra.length > 0 || !validSubresource || !validScope) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    return { resource, namespace: resource.namespaced ? namespace : '', name, subresource: subresource as 'status' | undefined };
  }

  #list({ resource, namespace }: Route, params: URLSearchParams, accept: string | undefined) {
    const limit = Number(params.get('limit') ?? 0);
    const token = params.get('continue');
    let snapshot: ListSnapshot;
    let offset = 0;
    if (token) {
      const decoded = decodeContinue(token);
      const kept = decoded && this.#snapshots.get(decoded.id);
      if (!decoded || !kept || Number(kept.resourceVersion) < this.storage.compactedThrough) {
        throw new ApiError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
      }
      snapshot = kept;
      offset = decoded.offset;
    } else {
      snapshot = { items: (isEventsView(resource) ? this.#events : this.storage).list(resource, namespace, selectorOf(params, resource)), resourceVersion: String(this.storage.revision) };
    }
    let items = snapshot.items.slice(offset);
    const metadata: Record<string, unknown> = { resourceVersion: snapshot.resourceVersion };
    if (limit > 0 && items.length > limit) {
      items = items.slice(0, limit);
      const id = token ? decodeContinue(token)!.id : this.#keepSnapshot(snapshot);
      metadata.continue = encodeContinue(id, offset + limit);
      metadata.remainingItemCount = snapshot.items.length - offset - limit;
    }
    if (wantsTable(accept)) return toTable(resource, items, metadata, params.get('includeObject'));
    return { apiVersion: apiVersionOf(resource), kind: `${resource.kind}List`, metadata, items };
  }

  #keepSnapshot(snapshot: ListSnapshot): string {
    const id = String(++this.#snapshotCounter);
    this.#snapshots.set(id, snapshot);
    for (const old of this.#snapshots.keys()) {
      if (this.#snapshots.size <= SNAPSHOTS_KEPT) break;
      this.#snapshots.delete(old);
    }
    return id;
  }

  #watch(res: ServerResponse, route: Route, params: URLSearchParams, accept: string | undefined): void {
    const watch = openWatch(res, { storage: this.storage, events: this.#events }, route.resource, route.namespace, params, accept);
    if (!watch) return;
    this.#watches.add(watch);
    res.once('close', () => this.#watches.delete(watch));
  }
}

export async function startFakeKubeApiServer(options: FakeKubeOptions = {}): Promise<FakeKubeApiServer> {
  return new FakeKubeApiServer(options).listen();
}
