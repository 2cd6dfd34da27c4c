// Process configuration, read once from the environment at start-up.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

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
  /** Create and print a demo key when the manifest file has no ApiKey at all. */
  bootstrapDemoKey: boolean;
  /** Public base URL used in image `url` answers; defaults to the request's own origin. */
  publicURL: string | null;
  /** How often the file source re-checks the file as a safety net beside fs.watch. */
  reloadPollMs: number;
  logLevel: string;
  /** Plan limits: the Plan whose limits bind accounts without a plan, and the answer reservation used when a request sets no max_tokens. */
  limits: { freePlan: string; reservedOutputTokens: number };
  /** Milliseconds since the epoch; replaced in tests to cross windows and months without waiting. */
  clock: () => number;
  /** Circuit breaker per upstream: consecutive failures that open it, and how long it stays open. */
  breaker: { threshold: number; cooldownMs: number };
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
    bootstrapDemoKey: env.TOLLGATE_BOOTSTRAP_KEY !== 'false',
    publicURL: env.TOLLGATE_PUBLIC_URL ?? null,
    reloadPollMs: env.TOLLGATE_RELOAD_POLL_MS ? Number(env.TOLLGATE_RELOAD_POLL_MS) : 1000,
    logLevel: env.LOG_LEVEL ?? 'info',
    limits: {
      freePlan: env.TOLLGATE_FREE_PLAN ?? 'free',
      reservedOutputTokens: env.TOLLGATE_RESERVED_OUTPUT_TOKENS ? Number(env.TOLLGATE_RESERVED_OUTPUT_TOKENS) : 1024,
    },
    clock: Date.now,
    breaker: {
      threshold: env.TOLLGATE_BREAKER_THRESHOLD ? Number(env.TOLLGATE_BREAKER_THRESHOLD) : 5,
      cooldownMs: env.TOLLGATE_BREAKER_COOLDOWN_MS ? Number(env.TOLLGATE_BREAKER_COOLDOWN_MS) : 30_000,
    },
  };
}
