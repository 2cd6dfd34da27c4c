// A fake Kubernetes API server for tests: a real HTTP server on port 0 speaking the REST and watch
// protocol the way kube-apiserver does, for the namespaced kinds Tollgate touches (the five
// tollgate.dev kinds, Secrets, EndpointSlices, Leases). Semantics live in kube-storage.ts; this file
// is routing, Status errors, list, and watch: chunked newline-delimited JSON events, replay from a
// resourceVersion out of a bounded history, ERROR 410 when that history is gone, bookmarks, label
// selectors with ADDED/DELETED on label transitions, timeoutSeconds. Tests also reach in directly
// (create/patch/delete through the same storage code, compact the history, drop every watch as an
// API server restart would) and read `requests` to assert what a client did.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseLabelSelector, type LabelSelector } from './kube-selectors.ts';
import { ApiError, apiVersionOf, KubeStorage, RESOURCE_TYPES, type KubeObject, type ResourceType, type StoredEvent } from './kube-storage.ts';

export type { KubeObject } from './kube-storage.ts';

export interface FakeKubeOptions {
  /** Events retained for watches; older resourceVersions get 410 Gone. */
  historyLimit?: number;
  /** When set, requests must carry `Authorization: Bearer <token>`. */
  token?: string;
  /** Send a BOOKMARK this often to watches that allow them (0: only on bookmark()). */
  bookmarkIntervalMs?: number;
}

export interface RecordedKubeRequest {
  method: string;
  path: string;
  query: Record<string, string>;
}

interface OpenWatch {
  response: ServerResponse;
  bookmarks: boolean;
  resource: ResourceType;
}

interface Route {
  resource: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: 'status' | undefined;
}

export class FakeKubeApiServer {
  readonly storage: KubeStorage;
  readonly requests: RecordedKubeRequest[] = [];
  url = '';
  #server = createServer((req, res) => void this.#handle(req, res));
  #watches = new Set<OpenWatch>();
  #token: string | undefined;
  #unavailable = false;
  #bookmarkTimer: NodeJS.Timeout | null = null;

  constructor(options: FakeKubeOptions = {}) {
    this.storage = new KubeStorage(options.historyLimit);
    this.#token = options.token;
    if (options.bookmarkIntervalMs) {
      this.#bookmarkTimer = setInterval(() => this.bookmark(), options.bookmarkIntervalMs);
      this.#bookmarkTimer.unref();
    }
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    if (this.#bookmarkTimer) clearInterval(this.#bookmarkTimer);
    this.dropWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
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

  // ---- test-facing operations, through the same storage semantics as HTTP ----

  create(object: KubeObject): KubeObject {
    const [type, namespace] = this.#typeOf(object);
    return this.storage.create(type, namespace, object);
  }

  /** Replaces the object, taking its current resourceVersion unless the caller set one. */
  replace(object: KubeObject): KubeObject {
    const [type, namespace] = this.#typeOf(object);
    const current = this.storage.get(type, namespace, object.metadata.name!);
    const body = { ...object, metadata: { ...object.metadata, resourceVersion: object.metadata.resourceVersion ?? current.metadata.resourceVersion } };
    return this.storage.replace(type, namespace, object.metadata.name!, body);
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

  mergePatch(apiVersion: string, kind: string, namespace: string, name: string, patch: unknown): KubeObject {
    const [type] = this.#typeOf({ apiVersion, kind, metadata: { namespace } });
    return this.storage.patch(type, namespace, name, { contentType: 'application/merge-patch+json', body: patch });
  }

  delete(apiVersion: string, kind: string, namespace: string, name: string): KubeObject {
    const [type] = this.#typeOf({ apiVersion, kind, metadata: { namespace } });
    return this.storage.delete(type, namespace, name);
  }

  /** Forgets the retained event history: any watch from an older resourceVersion now gets 410 Gone. */
  compact(): void {
    this.storage.compact();
  }

  /** Cuts every open watch connection, as an API server restart does. */
  dropWatches(): void {
    for (const watch of this.#watches) watch.response.destroy();
    this.#watches.clear();
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
    const type = RESOURCE_TYPES.find((t) => apiVersionOf(t) === object.apiVersion && t.kind === object.kind);
    if (!type) throw new Error(`the fake API server does not serve ${object.apiVersion} ${object.kind}`);
    return [type, object.metadata.namespace ?? 'default'];
  }

  // ---- HTTP ----

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    this.requests.push({ method: req.method!, path: url.pathname, query });
    try {
      if (this.#unavailable) throw new ApiError(503, 'ServiceUnavailable', 'the API server is shutting down or unavailable');
      if (this.#token !== undefined && req.headers.authorization !== `Bearer ${this.#token}`) throw new ApiError(401, 'Unauthorized', 'Unauthorized');
      const route = this.#route(url.pathname);
      const body = await readJson(req);
      const { resource, namespace, name, subresource } = route;
      const method = req.method!;
      if (name === undefined) {
        if (method === 'GET' && (query.watch === 'true' || query.watch === '1')) return this.#watch(res, route, url.searchParams);
        if (method === 'GET') return send(res, 200, this.#list(route, url.searchParams));
        if (method === 'POST' && namespace !== undefined) return send(res, 201, this.storage.create(resource, namespace, body as KubeObject));
      } else if (namespace !== undefined) {
        if (method === 'GET') return send(res, 200, this.storage.get(resource, namespace, name));
        if (method === 'PUT') return send(res, 200, this.storage.replace(resource, namespace, name, body as KubeObject, subresource));
        if (method === 'PATCH') return send(res, 200, this.storage.patch(resource, namespace, name, { contentType: req.headers['content-type'] ?? '', body }, subresource));
        if (method === 'DELETE' && !subresource) return send(res, 200, this.storage.delete(resource, namespace, name, (body as { preconditions?: object } | undefined)?.preconditions));
      }
      throw new ApiError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    } catch (error) {
      const failure = error instanceof ApiError ? error : new ApiError(500, 'InternalError', (error as Error).message);
      send(res, failure.code, failure.toStatus());
    }
  }

  #route(pathname: string): Route {
    const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
    // /api/v1/... is the core group; /apis/{group}/{version}/... every other group.
    const [group, version, rest] = parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : parts[0] === 'apis' ? [parts[1], parts[2], parts.slice(3)] : [null, null, []];
    let namespace: string | undefined;
    let tail = rest;
    if (tail[0] === 'namespaces' && tail.length >= 3) {
      namespace = tail[1];
      tail = tail.slice(2);
    }
    const [plural, name, subresource, ...extra] = tail;
    const resource = RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.plural === plural);
    const validSubresource = subresource === undefined || (subresource === 'status' && resource?.custom);
    if (!resource || extra.length > 0 || !validSubresource || (name !== undefined && namespace === undefined)) {
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    return { resource, namespace, name, subresource: subresource as 'status' | undefined };
  }

  #list({ resource, namespace }: Route, params: URLSearchParams) {
    const items = this.storage.list(resource, namespace, selectorOf(params));
    return { apiVersion: apiVersionOf(resource), kind: `${resource.kind}List`, metadata: { resourceVersion: String(this.storage.revision) }, items };
  }

  #watch(res: ServerResponse, { resource, namespace }: Route, params: URLSearchParams): void {
    const selector = selectorOf(params);
    const from = params.get('resourceVersion');
    let replay: StoredEvent[] = [];
    if (from && from !== '0') {
      if (!/^\d+$/.test(from)) throw new ApiError(400, 'BadRequest', `invalid resource version: ${from}`);
      try {
        replay = this.storage.eventsSince(Number(from));
      } catch (error) {
        // The real server answers 200 and reports 410 as the stream's only event.
        if (!(error instanceof ApiError)) throw error;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: error.toStatus() })}\n`);
        return;
      }
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const write = (type: string, object: KubeObject) => res.write(`${JSON.stringify({ type, object })}\n`);
    if (!from || from === '0') {
      // No resourceVersion (or "0"): the current state as synthetic ADDED events, then changes.
      for (const object of this.storage.list(resource, namespace, selector)) write('ADDED', { ...object, apiVersion: apiVersionOf(resource), kind: resource.kind });
    }
    const deliver = (event: StoredEvent) => {
      if (event.resource !== resource || (namespace !== undefined && event.namespace !== namespace)) return;
      const now = selector(event.object.metadata.labels);
      const before = event.previous !== null && selector(event.previous.metadata.labels);
      if (event.type === 'ADDED' && now) write('ADDED', event.object);
      else if (event.type === 'DELETED' && (now || before)) write('DELETED', event.object);
      else if (event.type === 'MODIFIED') {
        if (now && before) write('MODIFIED', event.object);
        else if (now) write('ADDED', event.object);
        else if (before) write('DELETED', event.object);
      }
    };
    // Replay and subscribe in one synchronous step, so no event falls between them.
    for (const event of replay) deliver(event);
    const unsubscribe = this.storage.subscribe(deliver);
    const watch: OpenWatch = { response: res, bookmarks: params.get('allowWatchBookmarks') === 'true', resource };
    this.#watches.add(watch);
    const timeoutSeconds = Number(params.get('timeoutSeconds') ?? 0);
    const timer = timeoutSeconds > 0 ? setTimeout(() => res.end(), timeoutSeconds * 1000) : null;
    res.once('close', () => {
      unsubscribe();
      if (timer) clearTimeout(timer);
      this.#watches.delete(watch);
    });
  }
}

export async function startFakeKubeApiServer(options: FakeKubeOptions = {}): Promise<FakeKubeApiServer> {
  return new FakeKubeApiServer(options).listen();
}

function selectorOf(params: URLSearchParams): LabelSelector {
  try {
    return parseLabelSelector(params.get('labelSelector'));
  } catch (error) {
    throw new ApiError(400, 'BadRequest', `unable to parse requirement: ${(error as Error).message}`);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ApiError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
