// The operator's configuration, read once from the environment.
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';

export interface OperatorConfig {
  namespace: string;
  /** A kubeconfig file; null lets client-node search (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig: string | null;
  port: number;
  host: string;
  identity: string;
  leaseName: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  keyPrefix: string;
  gatewayService: string;
  metricsPort: number;
  usageIntervalMs: number;
  probeIntervalMs: number;
  probeMaxIntervalMs: number;
  probeTimeoutMs: number;
  relistIntervalMs: number;
  logLevel: string;
}

function podNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

const number = (value: string | undefined, fallback: number, name: string): number => {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`${name} must be a non-negative number, not ${JSON.stringify(value)}`);
  return parsed;
};

export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  const leaseDurationMs = number(env.TOLLGATE_LEASE_DURATION_MS, 15_000, 'TOLLGATE_LEASE_DURATION_MS');
  return {
    namespace: env.TOLLGATE_NAMESPACE || podNamespace(),
    kubeconfig: null,
    port: number(env.TOLLGATE_OPERATOR_PORT, 8081, 'TOLLGATE_OPERATOR_PORT'),
    host: env.HOST ?? '0.0.0.0',
    identity: env.POD_NAME || `${hostname()}-${process.pid}`,
    leaseName: env.TOLLGATE_LEASE_NAME || 'tollgate-operator',
    leaseDurationMs,
    // As client-go's defaults (15 s / 10 s / 2 s): step down well before anyone may take over.
    renewDeadlineMs: number(env.TOLLGATE_LEASE_RENEW_DEADLINE_MS, Math.round(leaseDurationMs * (2 / 3)), 'TOLLGATE_LEASE_RENEW_DEADLINE_MS'),
    retryPeriodMs: number(env.TOLLGATE_LEASE_RETRY_MS, Math.round(leaseDurationMs / 7.5), 'TOLLGATE_LEASE_RETRY_MS'),
    keyPrefix: env.TOLLGATE_KEY_PREFIX || 'tg',
    gatewayService: env.TOLLGATE_GATEWAY_SERVICE || 'tollgate',
    metricsPort: number(env.TOLLGATE_METRICS_PORT, 9464, 'TOLLGATE_METRICS_PORT'),
    usageIntervalMs: number(env.TOLLGATE_USAGE_INTERVAL_MS, 15_000, 'TOLLGATE_USAGE_INTERVAL_MS'),
    probeIntervalMs: number(env.TOLLGATE_PROBE_INTERVAL_MS, 30_000, 'TOLLGATE_PROBE_INTERVAL_MS'),
    probeMaxIntervalMs: number(env.TOLLGATE_PROBE_MAX_INTERVAL_MS, 5 * 60_000, 'TOLLGATE_PROBE_MAX_INTERVAL_MS'),
    probeTimeoutMs: number(env.TOLLGATE_PROBE_TIMEOUT_MS, 5000, 'TOLLGATE_PROBE_TIMEOUT_MS'),
    relistIntervalMs: number(env.TOLLGATE_RELIST_INTERVAL_MS, 5 * 60_000, 'TOLLGATE_RELIST_INTERVAL_MS'),
    logLevel: env.LOG_LEVEL ?? 'info',
  };
}
