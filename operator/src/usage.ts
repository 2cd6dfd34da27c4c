// The usage roll-up: every few seconds, GET /usage from each ready endpoint of the gateway Service
// (found through its EndpointSlices; the port is the slice's port named `metrics`, else
// TOLLGATE_METRICS_PORT). Answers with scope `replica` are each one process's own counts and are
// summed; an answer with scope `cluster` is already the shared total (Redis mode) and is taken alone.
// A round in which some replica does not answer keeps the previous figures rather than publishing
// an undercount (docs/adr for the decision).
import { request } from 'undici';
import type { Logger } from 'pino';
import type { Obj } from './informers.ts';

export interface AccountCounts {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  /** This month's spend, a decimal string in the gateway's currency (gateways before spend: absent). */
  spend?: string;
}

export interface KeyCounts extends AccountCounts {
  account: string;
}

export interface UsageFigures {
  month: string;
  accounts: Record<string, AccountCounts>;
  /** Per ApiKey name. */
  keys: Record<string, KeyCounts>;
  /** The gateway's currency, as its answers name it. */
  currency: string;
  /** Replicas summed (or 1 for a cluster-scope answer). */
  replicas: number;
  at: string;
}

interface UsageAnswer {
  replica: string;
  scope: 'replica' | 'cluster';
  month: string;
  currency?: string;
  accounts: Record<string, AccountCounts>;
  keys?: Record<string, KeyCounts>;
}

/** A decimal amount as millionths, exactly (the gateway writes at most six decimals). */
export function microsOf(amount: string | undefined): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(amount ?? '');
  if (!match) return 0n;
  return BigInt(match[1]) * 1_000_000n + BigInt((match[2] ?? '').padEnd(6, '0'));
}

/** Millionths as the gateway writes them: at least two decimals, no trailing zeros beyond. */
export function formatMicros(micros: bigint): string {
  let fraction = (micros % 1_000_000n).toString().padStart(6, '0');
  while (fraction.length > 2 && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  return `${micros / 1_000_000n}.${fraction}`;
}

function addCounts<T extends AccountCounts>(into: T, counts: AccountCounts): void {
  into.inputTokens += counts.inputTokens ?? 0;
  into.outputTokens += counts.outputTokens ?? 0;
  into.requests += counts.requests ?? 0;
  into.spend = formatMicros(microsOf(into.spend) + microsOf(counts.spend));
}

export interface UsageOptions {
  intervalMs: number;
  timeoutMs: number;
  /** The port when a slice names none called `metrics`. */
  metricsPort: number;
}

export function nextMonthStart(month: string): string {
  const [year, m] = month.split('-').map(Number);
  return new Date(Date.UTC(year, m, 1)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** host:port of every ready endpoint, one per pod (dual-stack slices list a pod once per family). */
export function usageEndpoints(slices: readonly Obj[], defaultPort: number): string[] {
  const seen = new Map<string, string>();
  for (const slice of slices) {
    const port = (slice.ports ?? []).find((p: { name?: string }) => p?.name === 'metrics')?.port ?? defaultPort;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint?.conditions?.ready === false) continue;
      const address = endpoint?.addresses?.[0];
      if (!address) continue;
      const id = endpoint.targetRef?.uid ?? endpoint.targetRef?.name ?? `${address}:${port}`;
      if (!seen.has(id)) seen.set(id, address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);
    }
  }
  return [...seen.values()].sort();
}

/** Sums the replica answers of the latest month; a cluster answer of that month wins alone. */
export function combine(answers: readonly UsageAnswer[]): Omit<UsageFigures, 'at'> | null {
  if (answers.length === 0) return null;
  const month = answers.map((a) => a.month).sort().at(-1)!;
  const current = answers.filter((a) => a.month === month);
  const cluster = current.find((a) => a.scope === 'cluster');
  const currency = (cluster ?? current[0]).currency ?? 'USD';
  if (cluster) return { month, accounts: structuredClone(cluster.accounts), keys: structuredClone(cluster.keys ?? {}), currency, replicas: 1 };
  // One answer per ready endpoint, endpoints already one per pod (usageEndpoints): summed as they come,
  // not merged by replica name, which two processes outside a cluster can share (their host name).
  // Spend is summed exactly, as millionths.
  const accounts: Record<string, AccountCounts> = {};
  const keys: Record<string, KeyCounts> = {};
  for (const answer of current) {
    for (const [name, counts] of Object.entries(answer.accounts ?? {})) addCounts((accounts[name] ??= { inputTokens: 0, outputTokens: 0, requests: 0 }), counts);
    for (const [name, counts] of Object.entries(answer.keys ?? {})) addCounts((keys[name] ??= { account: counts.account, inputTokens: 0, outputTokens: 0, requests: 0 }), counts);
  }
  return { month, accounts, keys, currency, replicas: current.length };
}

export class UsageCollector {
  figures: UsageFigures | null = null;
  #options: UsageOptions;
  #log: Logger;
  #slices: () => Obj[];
  #onChange: (accounts: string[]) => void;
  #timer: NodeJS.Timeout | null = null;
  #active = false;
  /** Ends the usage reads in flight when the roll-up stops (leadership lost, shutdown). */
  #abort = new AbortController();

  constructor(options: UsageOptions, log: Logger, deps: { slices: () => Obj[]; onChange: (accounts: string[]) => void }) {
    this.#options = options;
    this.#log = log;
    this.#slices = deps.slices;
    this.#onChange = deps.onChange;
  }

  start(): void {
    this.#active = true;
    if (this.#abort.signal.aborted) this.#abort = new AbortController();
    this.#schedule(0);
  }

  /** Stops the roll-up; reads in flight are abandoned (their connections closed), not waited for. */
  stop(): void {
    this.#active = false;
    this.#abort.abort(new Error('usage roll-up stopped'));
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** One round now; resolves with whether the figures were replaced. */
  async collect(): Promise<boolean> {
    const endpoints = usageEndpoints(this.#slices(), this.#options.metricsPort);
    if (endpoints.length === 0) return false;
    const signal = this.#abort.signal;
    const settled = await Promise.allSettled(endpoints.map((endpoint) => this.#fetch(endpoint, signal)));
    if (signal.aborted) return false;
    const failed = endpoints.filter((_, i) => settled[i].status === 'rejected');
    const answers = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const cluster = answers.some((a) => a.scope === 'cluster');
    if (failed.length > 0 && !cluster) {
      this.#log.warn({ failed, reasons: settled.flatMap((s) => (s.status === 'rejected' ? [String((s.reason as Error)?.message ?? s.reason).slice(0, 200)] : [])) }, 'gateway replicas did not answer GET /usage; keeping the previous usage figures');
      return false;
    }
    const combined = combine(answers);
    if (!combined) return false;
    const previous = this.figures;
    this.figures = { ...combined, at: new Date().toISOString() };
    const changed = new Set<string>();
    for (const name of new Set([...Object.keys(combined.accounts), ...Object.keys(previous?.accounts ?? {})])) {
      if (previous?.month !== combined.month || JSON.stringify(previous?.accounts[name]) !== JSON.stringify(combined.accounts[name])) changed.add(name);
    }
    // A key's own figures changing re-evaluates its account, which re-evaluates its keys (controller.ts).
    for (const name of new Set([...Object.keys(combined.keys), ...Object.keys(previous?.keys ?? {})])) {
      const now = combined.keys[name];
      if (previous?.month !== combined.month || JSON.stringify(previous?.keys?.[name]) !== JSON.stringify(now)) changed.add(now?.account ?? previous?.keys?.[name]?.account ?? '*');
    }
    if (!previous) changed.add('*');
    if (changed.size > 0) this.#onChange([...changed]);
    return true;
  }

  #schedule(delayMs: number): void {
    if (!this.#active) return;
    this.#timer = setTimeout(async () => {
      try {
        await this.collect();
      } catch (error) {
        this.#log.warn({ err: (error as Error).message }, 'usage roll-up failed');
      }
      this.#schedule(this.#options.intervalMs);
    }, delayMs);
    this.#timer.unref();
  }

  async #fetch(endpoint: string, stop: AbortSignal): Promise<UsageAnswer> {
    const { timeoutMs } = this.#options;
    const response = await request(`http://${endpoint}/usage`, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]) });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`${endpoint}: GET /usage answered HTTP ${response.statusCode}`);
    }
    const answer = (await response.body.json()) as UsageAnswer;
    if (!answer || typeof answer.month !== 'string' || typeof answer.accounts !== 'object' || (answer.scope !== 'replica' && answer.scope !== 'cluster')) {
      throw new Error(`${endpoint}: GET /usage answered an unexpected shape`);
    }
    return answer;
  }
}
