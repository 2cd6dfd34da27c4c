// Process configuration, read once from the environment at start-up.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { consoleConfigFrom, type ConsoleConfig } from './console/config.ts';
import { parseOrigins } from './http/cors.ts';
import { redisConfigFromEnv, type RedisConfig } from './storage/redis-config.ts';
import type { TelemetryConfig } from './telemetry/telemetry.ts';
import { PrivateHostAllowance } from './upstream/remote-images/address-policy.ts';
import type { RemoteImageSettings } from './upstream/remote-images/inline-images.ts';
import { tracingConfigFrom } from './telemetry/tracing.ts';

export interface GatewayConfig {
  port: number;
  host: string;
  /** File of manifests; when unset, a copy of the bundled example in the data directory. */
  configFile: string;
  /** True when configFile was chosen by the operator (TOLLGATE_CONFIG), not defaulted. */
  configFileExplicit: boolean;
  dataDir: string;
  keyPrefix: string;
  /** Whole-request limit in bytes (the spec: 50 MB, Data URL images included). */
  maxBodyBytes: number;
  /** Bytes of JSON request bodies held in memory at once, across all requests; past it, 503 with Retry-After. */
  bodyBudgetBytes: number;
  /** Bytes of multipart bodies being received or kept on disk at once (spooled forms, staged uploads); past it, 503. */
  spoolBudgetBytes: number;
  /** JSON bodies this large or larger are parsed by a pool of `workers` threads, off the event loop (0 workers: never). */
  jsonParsing: { workers: number; offloadFromBytes: number };
  /** Largest single event accepted from an upstream event stream; past it the stream ends with an error event. */
  maxSseEventBytes: number;
  /** A translated Messages API stream silent this long (a model thinking) gets a `ping` event, as Anthropic sends. */
  streamPingMs: number;
  /** Client-facing timeouts (ms): a request's headers, a pause mid-body, an idle keep-alive connection. */
  timeouts: { headersMs: number; bodyIdleMs: number; keepAliveMs: number };
  /** Addresses and CIDR ranges of proxies whose X-Service-Request-Id is kept. */
  trustedProxies: string[];
  /** SIGTERM: how long in-flight requests and streams may run on, and how long new connections are still accepted. */
  shutdown: { graceMs: number; acceptMs: number };
  /** Create and print a demo key when the manifest file has no ApiKey at all. */
  bootstrapDemoKey: boolean;
  /** Public base URL used in image `url` answers; defaults to the request's own origin. */
  publicURL: string | null;
  /** How often the file source re-checks the file as a safety net beside fs.watch. */
  reloadPollMs: number;
  logLevel: string;
  /** Plan limits: the Plan whose limits bind accounts without a plan, and the answer reservation used when a request sets no max_tokens. */
  limits: { freePlan: string; reservedOutputTokens: number; currency: string };
  /** Milliseconds since the epoch; replaced in tests to cross windows and months without waiting. */
  clock: () => number;
  /** Image URLs fetched and inlined for the providers that take only bytes (Gemini, Vertex AI, Bedrock): switch, guards, caps. */
  remoteImages: RemoteImageSettings;
  /** Circuit breaker per upstream: consecutive failures that open it, and how long it stays open. */
  breaker: { threshold: number; cooldownMs: number };
  /** Where resources come from: the manifest file (standalone) or the Kubernetes API (informers). */
  source: 'file' | 'kubernetes';
  kubernetes: KubernetesSourceConfig;
  /** Browser origins allowed to call the API (CORS) whatever the account; empty: only Accounts' own lists. */
  corsOrigins: string[];
  /** The shared store (TOLLGATE_REDIS_URL) that makes limits exact across replicas; null: per-process state. */
  redis: RedisConfig | null;
  /** Metrics listener (TOLLGATE_METRICS_PORT), per-account series, and tracing (OTEL_*). */
  telemetry: TelemetryConfig;
  /** The account area (/console, /webhooks): sign-in, sessions, payment webhook. */
  console: ConsoleConfig;
}

export interface KubernetesSourceConfig {
  /** The namespace whose Tollgate objects, Secrets and EndpointSlices are followed. */
  namespace: string;
  /** The gateway's Service, whose ready endpoints are the live replica count; null: count 1. */
  serviceName: string | null;
  /** A kubeconfig file; null lets client-node search (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfig: string | null;
  /** Full relist period (jittered ±10%), a guard against drift between watches. */
  relistIntervalMs: number;
  /** Quiet time after an event before the snapshot is rebuilt, so bursts apply at once. */
  debounceMs: number;
  /** TOLLGATE_KUBE_SECRETS=false: Secrets are not followed (the console's pods, which proxy nothing and may not read Secrets). */
  followSecrets?: boolean;
}

/** A pod's own namespace, as the service account mount states it; `default` outside a cluster. */
function podNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

export const BUNDLED_EXAMPLE = fileURLToPath(new URL('../../config/standalone.yaml', import.meta.url));

export function loadConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const dataDir = path.resolve(env.TOLLGATE_DATA_DIR ?? './data');
  const explicit = Boolean(env.TOLLGATE_CONFIG);
  return {
    port: env.PORT !== undefined ? Number(env.PORT) : 8080,
    host: env.HOST ?? '0.0.0.0',
    configFile: explicit ? path.resolve(env.TOLLGATE_CONFIG!) : path.join(dataDir, 'tollgate.yaml'),
    configFileExplicit: explicit,
    dataDir,
    keyPrefix: env.TOLLGATE_KEY_PREFIX ?? 'tg',
    maxBodyBytes: env.TOLLGATE_MAX_BODY_BYTES ? Number(env.TOLLGATE_MAX_BODY_BYTES) : 50 * 1024 * 1024,
    bodyBudgetBytes: number(env.TOLLGATE_BODY_BUDGET_BYTES, 128 * 1024 * 1024),
    spoolBudgetBytes: number(env.TOLLGATE_SPOOL_BUDGET_BYTES, 1024 * 1024 * 1024),
    jsonParsing: {
      workers: number(env.TOLLGATE_JSON_PARSER_THREADS, 2),
      offloadFromBytes: number(env.TOLLGATE_JSON_OFFLOAD_BYTES, 1024 * 1024),
    },
    maxSseEventBytes: number(env.TOLLGATE_MAX_SSE_EVENT_BYTES, 8 * 1024 * 1024),
    streamPingMs: number(env.TOLLGATE_STREAM_PING_MS, 10_000),
    timeouts: {
      headersMs: number(env.TOLLGATE_HEADERS_TIMEOUT_MS, 20_000),
      bodyIdleMs: number(env.TOLLGATE_BODY_IDLE_TIMEOUT_MS, 30_000),
      keepAliveMs: number(env.TOLLGATE_KEEPALIVE_TIMEOUT_MS, 65_000),
    },
    trustedProxies: (env.TOLLGATE_TRUSTED_PROXIES ?? '').split(',').map((entry) => entry.trim()).filter(Boolean),
    shutdown: {
      graceMs: number(env.TOLLGATE_SHUTDOWN_GRACE_MS, 25_000),
      acceptMs: number(env.TOLLGATE_SHUTDOWN_ACCEPT_MS, 3_000),
    },
    bootstrapDemoKey: env.TOLLGATE_BOOTSTRAP_KEY !== 'false',
    publicURL: env.TOLLGATE_PUBLIC_URL ?? null,
    reloadPollMs: env.TOLLGATE_RELOAD_POLL_MS ? Number(env.TOLLGATE_RELOAD_POLL_MS) : 1000,
    logLevel: env.LOG_LEVEL ?? 'info',
    limits: {
      freePlan: env.TOLLGATE_FREE_PLAN ?? 'free',
      reservedOutputTokens: env.TOLLGATE_RESERVED_OUTPUT_TOKENS ? Number(env.TOLLGATE_RESERVED_OUTPUT_TOKENS) : 1024,
      currency: parseCurrency(env.TOLLGATE_CURRENCY),
    },
    clock: Date.now,
    remoteImages: remoteImagesFrom(env),
    breaker: {
      threshold: env.TOLLGATE_BREAKER_THRESHOLD ? Number(env.TOLLGATE_BREAKER_THRESHOLD) : 5,
      cooldownMs: env.TOLLGATE_BREAKER_COOLDOWN_MS ? Number(env.TOLLGATE_BREAKER_COOLDOWN_MS) : 30_000,
    },
    source: parseSource(env.TOLLGATE_SOURCE),
    kubernetes: {
      namespace: env.TOLLGATE_NAMESPACE || podNamespace(),
      serviceName: env.TOLLGATE_SERVICE_NAME || null,
      kubeconfig: null,
      relistIntervalMs: env.TOLLGATE_RELIST_INTERVAL_MS ? Number(env.TOLLGATE_RELIST_INTERVAL_MS) : 5 * 60_000,
      debounceMs: env.TOLLGATE_KUBE_DEBOUNCE_MS ? Number(env.TOLLGATE_KUBE_DEBOUNCE_MS) : 100,
      followSecrets: env.TOLLGATE_KUBE_SECRETS !== 'false',
    },
    corsOrigins: parseOrigins(env.TOLLGATE_CORS_ORIGINS),
    redis: redisConfigFromEnv(env),
    telemetry: {
      metricsPort: parseMetricsPort(env.TOLLGATE_METRICS_PORT),
      metricsHost: env.TOLLGATE_METRICS_HOST ?? env.HOST ?? '0.0.0.0',
      accountSeries: env.TOLLGATE_METRICS_ACCOUNT_SERIES ? Number(env.TOLLGATE_METRICS_ACCOUNT_SERIES) : 0,
      tracing: tracingConfigFrom(env),
    },
    console: consoleConfigFrom(env),
  };
}

/** 9464 by default (OpenTelemetry's Prometheus port); `off` keeps only /usage, on a free port. */
function parseMetricsPort(value: string | undefined): number | null {
  if (value === undefined || value === '') return 9464;
  if (value === 'off') return null;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`TOLLGATE_METRICS_PORT must be a port number or off, not ${JSON.stringify(value)}`);
  return port;
}

/** TOLLGATE_FETCH_IMAGE_*: on by default, strict about addresses unless hosts are opened by name or range. */
function remoteImagesFrom(env: NodeJS.ProcessEnv): RemoteImageSettings {
  const switchValue = (env.TOLLGATE_FETCH_IMAGE_URLS ?? 'on').trim().toLowerCase();
  if (!['on', 'off', 'true', 'false', ''].includes(switchValue)) throw new Error(`TOLLGATE_FETCH_IMAGE_URLS must be on or off, not ${JSON.stringify(env.TOLLGATE_FETCH_IMAGE_URLS)}`);
  const privateHosts = (env.TOLLGATE_FETCH_IMAGE_PRIVATE_HOSTS ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  // Refused at start-up, naming the entry, rather than at the first image.
  new PrivateHostAllowance(privateHosts);
  return {
    enabled: switchValue !== 'off' && switchValue !== 'false',
    privateHosts,
    timeoutMs: number(env.TOLLGATE_FETCH_IMAGE_TIMEOUT_MS, 10_000),
    maxImageBytes: number(env.TOLLGATE_FETCH_IMAGE_MAX_BYTES, 20 * 1024 * 1024),
    maxRequestBytes: number(env.TOLLGATE_FETCH_IMAGE_MAX_REQUEST_BYTES, 50 * 1024 * 1024),
    maxImages: number(env.TOLLGATE_FETCH_IMAGE_MAX_COUNT, 20),
  };
}

function number(value: string | undefined, fallback: number): number {
  return value ? Number(value) : fallback;
}

/** The currency of every price and spend budget: an ISO 4217 code (USD, EUR, …), named in messages and metrics. */
function parseCurrency(value: string | undefined): string {
  const currency = (value ?? 'USD').trim() || 'USD';
  if (!/^[A-Z]{3}$/.test(currency)) throw new Error(`TOLLGATE_CURRENCY must be a three-letter ISO 4217 code such as USD or EUR, not ${JSON.stringify(value)}`);
  return currency;
}

function parseSource(value: string | undefined): 'file' | 'kubernetes' {
  if (value === undefined || value === '' || value === 'file') return 'file';
  if (value === 'kubernetes') return 'kubernetes';
  throw new Error(`TOLLGATE_SOURCE must be file or kubernetes, not ${JSON.stringify(value)}`);
}
