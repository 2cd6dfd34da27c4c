// The Kubernetes collections the gateway and the operator follow (read-only list and watch),
// in one namespace. Connection and authentication come from @kubernetes/client-node's KubeConfig:
// KUBECONFIG or ~/.kube/config on a workstation, the service account token and CA inside a pod.
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { GROUP, PLURALS, VERSION, type Kind } from '@tollgate/crds';
import type { ObjectList, WatchClient } from './reflector.ts';

export interface Collection {
  /** For log lines. */
  kind: string;
  /** The API path that watches are opened on. */
  path: string;
  list(): Promise<ObjectList>;
  labelSelector?: string;
}

export interface KubeClient {
  watch: WatchClient;
  /** Where the API server is, for log lines (never credentials). */
  server: string;
  tollgate(kind: Kind): Collection;
  secrets(): Collection;
  endpointSlices(serviceName: string): Collection;
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
      list: () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURALS[kind] }) as Promise<ObjectList>,
    }),
    secrets: () => ({
      kind: 'Secret',
      path: `/api/v1/namespaces/${ns}/secrets`,
      list: () => core.listNamespacedSecret({ namespace }) as Promise<ObjectList>,
    }),
    endpointSlices: (serviceName) => {
      // The label the EndpointSlice controller puts on every slice of a Service.
      const labelSelector = `kubernetes.io/service-name=${serviceName}`;
      return {
        kind: 'EndpointSlice',
        path: `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
        labelSelector,
        list: () => discovery.listNamespacedEndpointSlice({ namespace, labelSelector }) as unknown as Promise<ObjectList>,
      };
    },
  };
}
