// Upstream probes: GET {baseURL}/models with the Upstream's credentials and extra headers, on a
// jittered interval, backing off while it fails (a dead provider is asked less often, never forgotten).
// Any HTTP answer means reachable; 401/403 means the credentials are refused; a 2xx body in OpenAI's
// list shape (or a translated provider's own, when its probe is a list) gives the model ids offered. The credential value is sent upstream only, never logged.
import { request } from 'undici';
import type { Logger } from 'pino';
import type { Upstream } from '@tollgate/crds';
import { ProviderAuthError, providerProbe } from '@tollgate/gateway/providers/probe';
import type { Obj } from './informers.ts';

export interface ProbeResult {
  at: string;
  /** The call made, as the conditions name it (`GET https://api.anthropic.com/v1/models?limit=1`). */
  target?: string;
  reachable: boolean;
  httpStatus: number;
  latencyMs: number;
  models?: string[];
  error?: string;
  /** Consecutive failed probes (unreachable or 5xx). */
  failures: number;
  /** The provider refused the credential (a 401/403, or a translated provider's own way of saying so). */
  credentialRefused?: boolean;
}

export interface ProbeOptions {
  intervalMs: number;
  maxIntervalMs: number;
  timeoutMs: number;
}

interface Target {
  fingerprint: string;
  timer: NodeJS.Timeout | null;
  running: boolean;
}

const MAX_MODELS = 1000;
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;

export class Prober {
  readonly results = new Map<string, ProbeResult>();
  #targets = new Map<string, Target>();
  #options: ProbeOptions;
  #log: Logger;
  #credential: (upstream: Obj) => string | undefined;
  #read: CredentialReader;
  #onResult: (name: string) => void;
  #upstreams: () => Obj[];
  #active = false;
  /** Ends the probes in flight when probing stops (leadership lost, shutdown). */
  #abort = new AbortController();

  constructor(options: ProbeOptions, log: Logger, deps: { upstreams: () => Obj[]; credential: (upstream: Obj) => string | undefined; read: CredentialReader; onResult: (name: string) => void }) {
    this.#options = options;
    this.#log = log;
    this.#upstreams = deps.upstreams;
    this.#credential = deps.credential;
    this.#read = deps.read;
    this.#onResult = deps.onResult;
  }

  start(): void {
    this.#active = true;
    if (this.#abort.signal.aborted) this.#abort = new AbortController();
    this.sync();
  }

  /** Stops probing; probes in flight are abandoned (their connections closed), not waited for. */
  stop(): void {
    this.#active = false;
    this.#abort.abort(new Error('probing stopped'));
    for (const target of this.#targets.values()) if (target.timer) clearTimeout(target.timer);
    this.#targets.clear();
    this.results.clear();
  }

  /** Follows the current Upstreams: new ones (or changed spec/credentials) are probed at once. */
  sync(): void {
    if (!this.#active) return;
    const seen = new Set<string>();
    for (const upstream of this.#upstreams()) {
      const name = upstream.metadata.name;
      seen.add(name);
      const fingerprint = JSON.stringify([upstream.metadata.uid, upstream.metadata.generation, upstream.spec, this.#credential(upstream) ?? '', credentialRefs(upstream).map((ref) => this.#read(ref) ?? '')]);
      const target = this.#targets.get(name);
      if (target && target.fingerprint === fingerprint) continue;
      if (target?.timer) clearTimeout(target.timer);
      this.results.delete(name);
      const next: Target = { fingerprint, timer: null, running: false };
      this.#targets.set(name, next);
      this.#schedule(name, next, 0);
    }
    for (const [name, target] of this.#targets) {
      if (seen.has(name)) continue;
      if (target.timer) clearTimeout(target.timer);
      this.#targets.delete(name);
      this.results.delete(name);
    }
  }

  #schedule(name: string, target: Target, delayMs: number): void {
    target.timer = setTimeout(() => void this.#probe(name, target), delayMs);
    target.timer.unref();
  }

  async #probe(name: string, target: Target): Promise<void> {
    target.timer = null;
    const upstream = this.#upstreams().find((u) => u.metadata.name === name);
    if (!upstream || this.#targets.get(name) !== target || !this.#active) return;
    const previous = this.results.get(name);
    const translated = providerProbe(upstream as unknown as Upstream, this.#read);
    const result = translated
      ? await probeProvider(translated, this.#options.timeoutMs, previous?.failures ?? 0, this.#abort.signal)
      : await probeOnce(upstream, this.#credential(upstream), this.#options.timeoutMs, previous?.failures ?? 0, this.#abort.signal);
    if (this.#targets.get(name) !== target || !this.#active) return;
    this.results.set(name, result);
    if (!result.reachable && (previous?.reachable ?? true)) this.#log.warn({ upstream: name, error: result.error }, 'upstream probe failed');
    this.#onResult(name);
    const { intervalMs, maxIntervalMs } = this.#options;
    const base = result.failures > 0 ? Math.min(maxIntervalMs, intervalMs * 2 ** Math.min(result.failures - 1, 10)) : intervalMs;
    // ±20% so that many Upstreams (and operator restarts) do not probe in step.
    this.#schedule(name, target, Math.round(base * (0.8 + Math.random() * 0.4)));
  }
}

/** Reads an env or secretRef credential reference (Bedrock's access keys, a provider's key). */
export type CredentialReader = (ref: { env: string } | { secretRef: { name: string; key: string } }) => string | undefined;

/** Every credential reference an Upstream names: its key, and Bedrock's access keys. */
export function credentialRefs(upstream: Obj): Array<{ env: string } | { secretRef: { name: string; key: string } }> {
  const spec = upstream.spec ?? {};
  return [spec.credentials, spec.bedrock?.accessKeyId, spec.bedrock?.secretAccessKey, spec.bedrock?.sessionToken].filter((ref) => ref && typeof ref === 'object');
}

/**
 * A translated provider's cheapest authenticated call (gateway/src/providers/probe.ts). A credential
 * that cannot be had (a missing variable, a token endpoint that says no) is reported as refused.
 */
async function probeProvider(probe: NonNullable<ReturnType<typeof providerProbe>>, timeoutMs: number, failuresBefore: number, stop: AbortSignal): Promise<ProbeResult> {
  const started = performance.now();
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]);
  try {
    const headers = await probe.headers(signal);
    const response = await request(probe.url, { method: probe.method, headers, body: probe.body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal });
    const latencyMs = Math.round(performance.now() - started);
    let models: string[] | undefined;
    let credentialRefused = false;
    if (response.statusCode >= 200 && response.statusCode < 300) models = boundedIds(probe.modelIds(await readJson(response.body)));
    else if (response.statusCode < 500) credentialRefused = probe.credentialRefused(response.statusCode, response.headers, await readErrorText(response.body));
    else await response.body.dump();
    // Anthropic's overload (529) and Bedrock's throttling are answers: reachable, but failing.
    const failures = response.statusCode >= 500 ? failuresBefore + 1 : 0;
    return { at, target: probe.description, reachable: true, httpStatus: response.statusCode, latencyMs, models, failures, credentialRefused };
  } catch (error) {
    const latencyMs = Math.round(performance.now() - started);
    if (error instanceof ProviderAuthError) return { at, target: probe.description, reachable: true, httpStatus: 401, latencyMs, error: error.message.slice(0, 300), failures: 0 };
    const err = error as { code?: string; message?: string; name?: string };
    const what = err.name === 'TimeoutError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' ? `no answer within ${timeoutMs} ms` : (err.code ?? err.message ?? String(error));
    return { at, target: probe.description, reachable: false, httpStatus: 0, latencyMs, error: String(what).split('\n')[0].slice(0, 200), failures: failuresBefore + 1 };
  }
}

export async function probeOnce(upstream: Obj, credential: string | undefined, timeoutMs: number, failuresBefore: number, stop?: AbortSignal): Promise<ProbeResult> {
  const base = String(upstream.spec?.baseURL ?? '').replace(/\/$/, '');
  const headers: Record<string, string> = { accept: 'application/json', ...(upstream.spec?.headers ?? {}) };
  if (credential) headers.authorization = `Bearer ${credential}`;
  const started = performance.now();
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  try {
    const response = await request(`${base}/models`, { method: 'GET', headers, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: stop ? AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]) : AbortSignal.timeout(timeoutMs) });
    const latencyMs = Math.round(performance.now() - started);
    let models: string[] | undefined;
    if (response.statusCode >= 200 && response.statusCode < 300) models = boundedIds(openAIModelIds(await readJson(response.body)));
    else await response.body.dump();
    const failures = response.statusCode >= 500 ? failuresBefore + 1 : 0;
    return { at, reachable: true, httpStatus: response.statusCode, latencyMs, models, failures };
  } catch (error) {
    const latencyMs = Math.round(performance.now() - started);
    const err = error as { code?: string; message?: string; name?: string };
    const what = err.name === 'TimeoutError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' ? `no answer within ${timeoutMs} ms` : (err.code ?? err.message ?? String(error));
    return { at, reachable: false, httpStatus: 0, latencyMs, error: String(what).split('\n')[0].slice(0, 200), failures: failuresBefore + 1 };
  }
}

/** A refusal's text, for the provider to say whether it refused the credential (they are a few hundred bytes). */
async function readErrorText(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > MAX_ERROR_BYTES) break;
  }
  return Buffer.concat(chunks).subarray(0, MAX_ERROR_BYTES).toString('utf8');
}

/** A 2xx answer as JSON: undefined when it is too large or not JSON. */
async function readJson(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The model ids of OpenAI's list shape, `data[].id`. */
function openAIModelIds(json: unknown): string[] | undefined {
  const data = (json as { data?: unknown } | null | undefined)?.data;
  if (!Array.isArray(data)) return undefined;
  return data.map((m) => m?.id).filter((id): id is string => typeof id === 'string');
}

function boundedIds(ids: string[] | undefined): string[] | undefined {
  return ids?.slice(0, MAX_MODELS).sort();
}
