// The Kubernetes collections the gateway and the operator follow (read-only list and watch),
// in one namespace. Connection and authentication come from @kubernetes/client-node's KubeConfig:
// KUBECONFIG or ~/.kube/config on a workstation, the service account token and CA inside a pod.
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, KubeConfig, Observable, Watch, type ConfigurationOptions, type ObservableMiddleware, type RequestContext, type ResponseContext } from '@kubernetes/client-node';
import { GROUP, PLURALS, VERSION, type Kind } from '@tollgate/crds';
import type { ObjectList, WatchClient } from './reflector.ts';

export interface Collection {
  /** For log lines. */
  kind: string;
  /** The API path that watches are opened on. */
  path: string;
  /** Aborting `signal` abandons the list, closing its connection. */
  list(signal?: AbortSignal): Promise<ObjectList>;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface KubeClient {
  watch: WatchClient;
  /** Where the API server is, for log lines (never credentials). */
  server: string;
  tollgate(kind: Kind): Collection;
  secrets(): Collection;
  endpointSlices(serviceName: string): Collection;
}

/** Objects per list page: a large namespace comes back in bounded answers, as client-go's pager does it. */
export const LIST_PAGE_SIZE = 500;

interface Page extends ObjectList {
  metadata?: { resourceVersion?: string; continue?: string };
}

/**
 * Lists a collection page by page (limit/continue). Every page belongs to the first page's snapshot,
 * so the result carries that resourceVersion, as one unpaged list would. When a continue token has
 * expired (410: the snapshot was compacted away while paging) the list is taken again unpaged, as
 * client-go's pager falls back.
 */
export async function listInPages(page: (options: { limit?: number; _continue?: string }) => Promise<Page>, pageSize = LIST_PAGE_SIZE): Promise<ObjectList> {
  const items: ObjectList['items'] = [];
  let resourceVersion: string | undefined;
  let token: string | undefined;
  do {
    let answer: Page;
    try {
      answer = await page({ limit: pageSize, ...(token ? { _continue: token } : {}) });
    } catch (error) {
      const { code, statusCode } = (error ?? {}) as { code?: number; statusCode?: number };
      if (token && (code === 410 || statusCode === 410)) return page({});
      throw error;
    }
    items.push(...(answer.items ?? []));
    resourceVersion ??= answer.metadata?.resourceVersion;
    token = answer.metadata?.continue || undefined;
  } while (token);
  return { items, metadata: { resourceVersion } };
}

/**
 * Per-call options for client-node's generated APIs that hand `signal` to the request: it reaches
 * the fetch underneath, so aborting it closes the connection. Appended to the configuration's own
 * middleware (authentication), as client-node's setHeaderOptions does, not replacing it.
 */
export function withSignal(signal: AbortSignal | undefined): ConfigurationOptions<ObservableMiddleware> | undefined {
  if (!signal) return undefined;
  const pass = <T>(context: T) => new Observable(Promise.resolve(context));
  return {
    middleware: [{ pre: (context: RequestContext) => (context.setSignal(signal), pass(context)), post: (context: ResponseContext) => pass(context) }],
    middlewareMergeStrategy: 'append',
  };
}

/** An explicit kubeconfig file, or client-node's default search (KUBECONFIG, ~/.kube/config, in-cluster). */
export function loadKubeConfig(file: string | null): KubeConfig {
  const config = new KubeConfig();
  if (file) config.loadFromFile(file);
  else config.loadFromDefault();
  return config;
}

export function createKubeClient(config: KubeConfig, namespace: string): KubeClient {
  const custom = config.makeApiClient(CustomObjectsApi);
  const core = config.makeApiClient(CoreV1Api);
  const discovery = config.makeApiClient(DiscoveryV1Api);
  const ns = encodeURIComponent(namespace);
  return {
    watch: new Watch(config),
    server: config.getCurrentCluster()?.server ?? '(no cluster in kubeconfig)',
    tollgate: (kind) => ({
      kind,
      path: `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURALS[kind]}`,
      list: (signal) => listInPages((page) => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURALS[kind], ...page }, withSignal(signal)) as Promise<Page>),
    }),
    secrets: () => ({
      kind: 'Secret',
      path: `/api/v1/namespaces/${ns}/secrets`,
      list: (signal) => listInPages((page) => core.listNamespacedSecret({ namespace, ...page }, withSignal(signal)) as Promise<Page>),
    }),
    endpointSlices: (serviceName) => {
      // The label the EndpointSlice controller puts on every slice of a Service.
      const labelSelector = `kubernetes.io/service-name=${serviceName}`;
      return {
        kind: 'EndpointSlice',
        path: `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
        labelSelector,
        list: (signal) => listInPages((page) => discovery.listNamespacedEndpointSlice({ namespace, labelSelector, ...page }, withSignal(signal)) as unknown as Promise<Page>),
      };
    },
  };
}
