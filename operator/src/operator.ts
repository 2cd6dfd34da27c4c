// Builds the operator in one place and runs it: informers (on every replica, so a follower is warm),
// leader election, and, while leading, the controller, the upstream prober and the usage roll-up.
import { createKubeClient, loadKubeConfig } from '@tollgate/kube';
import type { Logger } from 'pino';
import type { Server } from 'node:http';
import type { OperatorConfig } from './config.ts';
import { Controller } from './controller.ts';
import { EventRecorder } from './events.ts';
import { startHttpServer } from './http-server.ts';
import { Informers, type Obj } from './informers.ts';
import { createKubeApi } from './kube-api.ts';
import { LeaderElector } from './leader.ts';
import { OperatorMetrics } from './metrics.ts';
import { Prober } from './probes.ts';
import { UsageCollector } from './usage.ts';

/** How long a stopping leader tries to release its Lease; past it, the Lease expires on its own. */
export const LEASE_RELEASE_TIMEOUT_MS = 2000;

export interface RunningOperator {
  port: number;
  controller: Controller;
  elector: LeaderElector;
  stop(): Promise<void>;
}

export async function startOperator(config: OperatorConfig, log: Logger): Promise<RunningOperator> {
  const kubeConfig = loadKubeConfig(config.kubeconfig);
  const client = createKubeClient(kubeConfig, config.namespace);
  const api = createKubeApi(kubeConfig, config.namespace);
  const metrics = new OperatorMetrics();
  const informers = new Informers(client, log, { relistIntervalMs: config.relistIntervalMs, gatewayService: config.gatewayService });
  let controller: Controller;
  const prober = new Prober({ intervalMs: config.probeIntervalMs, maxIntervalMs: config.probeMaxIntervalMs, timeoutMs: config.probeTimeoutMs }, log, {
    upstreams: () => informers.list('Upstream'),
    credential: (upstream) => credentialOf(upstream, informers),
    read: (ref) => readCredential(ref, informers),
    onResult: (name) => {
      const result = prober.results.get(name)!;
      metrics.probes.inc({ result: !result.reachable ? 'unreachable' : result.httpStatus === 401 || result.httpStatus === 403 || result.credentialRefused ? 'refused' : result.httpStatus < 300 ? 'ok' : 'error' });
      controller.probed(name);
    },
  });
  const usage = new UsageCollector({ intervalMs: config.usageIntervalMs, timeoutMs: 3000, metricsPort: config.metricsPort }, log, {
    slices: () => informers.endpointSlices(),
    onChange: (accounts) => controller.usageChanged(accounts),
  });
  const events = new EventRecorder(api, log, config.identity);
  controller = new Controller({ informers, api, log, metrics, events, prober, usage }, { keyPrefix: config.keyPrefix, concurrency: 4, retry: { baseDelayMs: 200, maxDelayMs: 60_000 } });

  let leading = false;
  let stopping = false;
  let synced: Promise<void> | null = null;
  const whenSynced = () => (synced ??= waitUntil(() => informers.synced));
  const elector = new LeaderElector(api, log, { name: config.leaseName, identity: config.identity, leaseDurationMs: config.leaseDurationMs, renewDeadlineMs: config.renewDeadlineMs, retryPeriodMs: config.retryPeriodMs }, {
    onStartedLeading: () => {
      leading = true;
      metrics.leader.set(1);
      void whenSynced().then(() => leading && !stopping && controller.startLeading());
    },
    onStoppedLeading: () => {
      leading = false;
      metrics.leader.set(0);
      void controller.stopLeading();
    },
  });

  const http = await startHttpServer(config.port, config.host, metrics, {
    ready: () => ({ ready: informers.synced, waitingFor: informers.waitingFor(), leader: leading }),
  });
  log.info({ port: http.port, namespace: config.namespace, identity: config.identity, server: client.server }, 'operator listening');
  informers.start();
  elector.start();

  return {
    port: http.port,
    controller,
    elector,
    // Bounded whatever the API server does (ADR 33): nothing here waits on an answer except the
    // Lease release, which has LEASE_RELEASE_TIMEOUT_MS.
    async stop() {
      stopping = true;
      // Stop taking work and abandon what is in flight: lists and watches, reconciles, probes, usage
      // reads. The aborts happen in these calls; what they return only settles the abandoned calls.
      const informersStopped = informers.stop();
      const controllerStopped = controller.stopLeading();
      // Then step down at once, not after the abandoned calls have settled: the renewal in flight is
      // abandoned and the Lease released (or left to expire). A write of ours that still lands is
      // checked by the successor as any stale write is (resourceVersion preconditions).
      await elector.stop(LEASE_RELEASE_TIMEOUT_MS);
      await controllerStopped;
      await informersStopped;
      await closeServer(http.server);
    },
  };
}

/** The probe's credential: the referenced Secret's value, or the operator's own environment variable. */
function credentialOf(upstream: Obj, informers: Informers): string | undefined {
  const credentials = upstream.spec?.credentials;
  return credentials ? readCredential(credentials, informers) : undefined;
}

function readCredential(ref: { env?: string; secretRef?: { name: string; key: string } }, informers: Informers): string | undefined {
  if (ref.secretRef) {
    const encoded = informers.secret(ref.secretRef.name)?.data?.[ref.secretRef.key];
    return encoded ? Buffer.from(encoded, 'base64').toString('utf8').trim() || undefined : undefined;
  }
  if (ref.env) return process.env[ref.env] || undefined;
  return undefined;
}

function waitUntil(condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (condition() ? resolve() : setTimeout(check, 50).unref());
    check();
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
