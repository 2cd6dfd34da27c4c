// One collection of Kubernetes objects kept in memory by list-then-watch, the reflector of client-go:
// list, watch from the list's resourceVersion, follow events and bookmarks; on 410 Gone (the API
// server no longer holds the history we would resume from) list again and diff, so deletions made
// during the gap are not missed; relist on a jittered period as a guard against drift; on any other
// failure retry with capped, jittered exponential backoff, forever. It never writes to the API.
// client-node's ListWatch is not used because it stops on errors other than 410, has no periodic
// relist, and cannot be asked to relist (docs/adr/0006-kubernetes-source.md).
import type { Logger } from 'pino';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

export interface ObjectList {
  items: KubeObject[];
  metadata?: { resourceVersion?: string };
}

/** The part of client-node's Watch used here, so tests and callers can see the contract. */
export interface WatchClient {
  watch(path: string, query: Record<string, string | number | boolean | undefined>, onEvent: (type: string, object: any) => void, done: (error: any) => void): Promise<AbortController>;
}

export interface ReflectorOptions {
  /** For log lines: the kind (or resource) followed. */
  kind: string;
  /** The collection's API path, e.g. /apis/tollgate.dev/v1alpha1/namespaces/ai/plans. */
  path: string;
  /** `signal` is aborted when the reflector stops: a list in flight is abandoned, not waited for. */
  list(signal?: AbortSignal): Promise<ObjectList>;
  watch: WatchClient;
  labelSelector?: string;
  /** Equality on metadata.name / metadata.namespace (and per-kind fields); watches carry it, `list` must too. */
  fieldSelector?: string;
  log: Logger;
  relistIntervalMs: number;
  backoff?: { initialMs: number; maxMs: number };
  /** Shapes each object before it is kept (drop what need not stay in memory). */
  transform?(object: KubeObject): KubeObject;
  /** Called after a list that changed anything (always after the first) and after each object event. */
  onChange(): void;
  /** Called, before onChange, with the name of each object a watch event or a list added, changed or removed. */
  onObject?(name: string): void;
}

type WatchOutcome = 'closed' | 'gone' | 'interrupted';

/** A list the API server accepted but never answers must not stall the reflector for good. */
const LIST_TIMEOUT_MS = 60_000;

export class Reflector {
  /** Objects by name; one namespace per reflector. Mutated in place, so holders see the latest. */
  readonly objects = new Map<string, KubeObject>();
  readonly kind: string;
  #options: ReflectorOptions;
  #resourceVersion = '';
  #lists = 0;
  #listsStarted = 0;
  /** Set by relist(); a list already in flight when it was asked for does not satisfy it. */
  #relistPending = false;
  #listWaiters: Array<{ after: number; resolve: () => void }> = [];
  #failures = 0;
  #stopped = false;
  #running: Promise<void> | null = null;
  #abortWatch: (() => void) | null = null;
  #relistTimer: NodeJS.Timeout | null = null;
  #wake: (() => void) | null = null;
  #abort = new AbortController();

  constructor(options: ReflectorOptions) {
    this.#options = options;
    this.kind = options.kind;
  }

  /** True once the first list has completed. */
  get synced(): boolean {
    return this.#lists > 0;
  }

  start(): void {
    this.#running ??= this.#run();
  }

  /** Stops following: the list or watch in flight is abandoned at once, whatever the API server does. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error('the reflector stopped'));
    if (this.#relistTimer) clearTimeout(this.#relistTimer);
    this.#abortWatch?.();
    this.#wake?.();
    await this.#running;
  }

  /** Lists again at the next opportunity (ending the current watch) and diffs against what is held. */
  relist(): void {
    this.#resourceVersion = '';
    this.#relistPending = true;
    this.#abortWatch?.();
  }

  /** Resolves after a list that starts after this call has completed. */
  nextList(): Promise<void> {
    const after = this.#listsStarted;
    return new Promise((resolve) => this.#listWaiters.push({ after, resolve }));
  }

  async #run(): Promise<void> {
    const { log, kind } = this.#options;
    while (!this.#stopped) {
      try {
        // Again while a relist was asked for during the list: a watch always starts from a list's version.
        while (!this.#resourceVersion && !this.#stopped) await this.#list();
        if (this.#stopped) break;
        const outcome = await this.#watchOnce();
        if (outcome === 'gone') {
          log.info({ kind }, 'watch history expired (410 Gone); relisting');
          this.#resourceVersion = '';
        }
      } catch (error) {
        if (this.#stopped) break;
        if (isGone(error)) {
          this.#resourceVersion = '';
          continue;
        }
        this.#failures += 1;
        const delay = this.#backoff();
        log.warn({ kind, err: describeError(error), retryInMs: delay, failures: this.#failures }, 'Kubernetes list/watch failed; retrying with backoff');
        await this.#sleep(delay);
      }
    }
  }

  async #list(): Promise<void> {
    const ordinal = ++this.#listsStarted;
    this.#relistPending = false;
    const list = await withTimeout(this.#options.list(this.#abort.signal), LIST_TIMEOUT_MS, this.#abort.signal);
    const resourceVersion = list.metadata?.resourceVersion;
    if (!resourceVersion) throw new Error('the list answer carries no metadata.resourceVersion');
    const next = new Map<string, KubeObject>();
    for (const item of list.items ?? []) {
      const name = item.metadata?.name;
      if (name) next.set(name, this.#shape(item));
    }
    const touched: string[] = [];
    for (const [name, object] of next) if (this.objects.get(name)?.metadata?.resourceVersion !== object.metadata?.resourceVersion) touched.push(name);
    for (const name of this.objects.keys()) if (!next.has(name)) touched.push(name);
    const changed = touched.length > 0;
    this.objects.clear();
    for (const [name, object] of next) this.objects.set(name, object);
    // A relist asked for while this list was in flight gets a list of its own.
    this.#resourceVersion = this.#relistPending ? '' : resourceVersion;
    this.#failures = 0;
    const first = this.#lists === 0;
    this.#lists += 1;
    this.#scheduleRelist();
    if (this.#options.onObject) for (const name of touched) this.#options.onObject(name);
    if (changed || first) this.#options.onChange();
    const satisfied = this.#listWaiters.filter((waiter) => waiter.after < ordinal);
    this.#listWaiters = this.#listWaiters.filter((waiter) => waiter.after >= ordinal);
    for (const waiter of satisfied) waiter.resolve();
  }

  #watchOnce(): Promise<WatchOutcome> {
    const { path, labelSelector, fieldSelector, watch } = this.#options;
    return new Promise<WatchOutcome>((resolve, reject) => {
      let settled = false;
      let controller: AbortController | null = null;
      const openedAt = Date.now();
      let events = 0;
      const settle = (outcome: WatchOutcome | Error) => {
        if (settled) return;
        settled = true;
        this.#abortWatch = null;
        controller?.abort();
        // A watch that delivered something or stayed open a while was healthy: earlier failures are over.
        if (events > 0 || Date.now() - openedAt > 5000) this.#failures = 0;
        if (outcome instanceof Error) return reject(outcome);
        // A watch that ends at once without a word is as bad as an error; back off rather than spin.
        if (outcome === 'closed' && events === 0 && Date.now() - openedAt < 1000) return reject(new Error('the watch closed as soon as it opened'));
        resolve(outcome);
      };
      this.#abortWatch = () => settle('interrupted');
      const onEvent = (type: string, object: KubeObject & { code?: number; message?: string }) => {
        if (settled) return;
        if (type === 'ERROR') {
          if (object?.code === 410) return settle('gone');
          return settle(Object.assign(new Error(`watch ERROR event: ${object?.message ?? 'unknown'}`), { statusCode: object?.code }));
        }
        const name = object?.metadata?.name;
        if (object?.metadata?.resourceVersion) this.#resourceVersion = object.metadata.resourceVersion;
        events += 1;
        if (type === 'BOOKMARK' || !name) return;
        if (type === 'DELETED') this.objects.delete(name);
        else if (type === 'ADDED' || type === 'MODIFIED') this.objects.set(name, this.#shape(object));
        else return;
        this.#options.onObject?.(name);
        this.#options.onChange();
      };
      const done = (error: unknown) => {
        if (!error) return settle('closed');
        if (isGone(error)) return settle('gone');
        // client-node ends a watch that was silent for its inactivity timeout; resuming is all it needs.
        if ((error as Error).name === 'TimeoutError') return settle('interrupted');
        settle(error instanceof Error ? error : new Error(String(error)));
      };
      // Server-side timeouts spread over 5-10 minutes, as client-go does, so replicas do not reconnect in step.
      const query = { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300 + Math.floor(Math.random() * 300), labelSelector, ...(fieldSelector ? { fieldSelector } : {}) };
      watch.watch(path, query, onEvent, done).then(
        (opened) => {
          controller = opened;
          if (settled) opened.abort();
        },
        (error) => settle(error instanceof Error ? error : new Error(String(error))),
      );
      if (this.#stopped) settle('interrupted');
    });
  }

  #shape(object: KubeObject): KubeObject {
    return this.#options.transform ? this.#options.transform(object) : object;
  }

  #backoff(): number {
    const { initialMs, maxMs } = this.#options.backoff ?? { initialMs: 500, maxMs: 30_000 };
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(this.#failures - 1, 20));
    // Full jitter between half and all of the ceiling: replicas that failed together retry apart.
    return Math.round(ceiling * (0.5 + Math.random() / 2));
  }

  #scheduleRelist(): void {
    if (this.#relistTimer) clearTimeout(this.#relistTimer);
    if (this.#stopped || this.#options.relistIntervalMs <= 0) return;
    const interval = this.#options.relistIntervalMs * (0.9 + Math.random() * 0.2);
    this.#relistTimer = setTimeout(() => this.relist(), interval);
    this.#relistTimer.unref();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = null;
        resolve();
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = null;
        resolve();
      };
    });
  }
}

/** The promise, or a rejection after `ms` or when `signal` aborts, whichever comes first. */
function withTimeout<T>(promise: Promise<T>, ms: number, signal: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const cut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the list did not answer within ${ms} ms`)), ms);
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, cut]).finally(() => {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  });
}

function isGone(error: unknown): boolean {
  const { statusCode, code } = (error ?? {}) as { statusCode?: number; code?: number };
  return statusCode === 410 || code === 410;
}

/** An error's message without response bodies, which could be long; never an object's contents. */
function describeError(error: unknown): string {
  const { code, statusCode, message } = (error ?? {}) as { code?: unknown; statusCode?: unknown; message?: string };
  const status = typeof code === 'number' ? code : typeof statusCode === 'number' ? statusCode : undefined;
  const text = (message ?? String(error)).split('\n')[0].slice(0, 300);
  return status ? `HTTP ${status}: ${text}` : text;
}
