// Kubernetes mode: the console's writes through the API server, with the console's own ServiceAccount
// (create/delete ApiKeys, get/patch Accounts in its namespace; the chart's Role allows nothing else).
// Plain JSON over HTTP with client-node's KubeConfig for the connection and credentials, as the
// operator does, because the payment write needs a merge patch with a resourceVersion precondition.
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { GROUP, PLURALS, VERSION, type Account, type ApiKey, type Kind } from '@tollgate/crds';
import { parseMoney } from '../limits/money.ts';
import { ConflictError, paymentAnnotations, type ConsoleWriter, type MonthTotals, type PaymentChange, type PaymentOutcome } from './writer.ts';

const REQUEST_TIMEOUT_MS = 15_000;
/** A payment write that loses a race with another writer is tried again on the fresh object. */
const PAYMENT_ATTEMPTS = 5;

class KubeStatusError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export class KubeConsoleWriter implements ConsoleWriter {
  readonly mode = 'kubernetes' as const;
  readonly #config: KubeConfig;
  readonly #namespace: string;

  constructor(config: KubeConfig, namespace: string) {
    this.#config = config;
    this.#namespace = namespace;
  }

  #path(kind: Kind, name?: string): string {
    return `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(this.#namespace)}/${PLURALS[kind]}${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  async createKey(key: ApiKey): Promise<void> {
    await this.#create('ApiKey', key);
  }

  async revokeKey(name: string): Promise<void> {
    try {
      await this.#request('DELETE', this.#path('ApiKey', name));
    } catch (error) {
      if (!(error instanceof KubeStatusError && error.statusCode === 404)) throw error;
    }
  }

  async createAccount(account: Account): Promise<void> {
    await this.#create('Account', account);
  }

  async applyPayment(name: string, eventId: string, change: PaymentChange): Promise<PaymentOutcome> {
    for (let attempt = 1; ; attempt++) {
      let current: Account;
      try {
        current = (await this.#request('GET', this.#path('Account', name))) as Account;
      } catch (error) {
        if (error instanceof KubeStatusError && error.statusCode === 404) return 'missing';
        throw error;
      }
      const annotations = paymentAnnotations(current.metadata.annotations, eventId, change);
      if (annotations === 'duplicate') return 'duplicate';
      const patch = { metadata: { resourceVersion: current.metadata.resourceVersion, annotations }, spec: { plan: change.plan } };
      try {
        await this.#request('PATCH', this.#path('Account', name), patch, 'application/merge-patch+json');
        return 'applied';
      } catch (error) {
        // Someone else changed the Account in between (perhaps the same event at another replica): read again.
        if (error instanceof KubeStatusError && error.statusCode === 409 && attempt < PAYMENT_ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /** The addresses of the ready endpoints of a Service (its EndpointSlices), for the per-day usage of every gateway replica. */
  async readyAddresses(service: string): Promise<string[]> {
    const selector = encodeURIComponent(`kubernetes.io/service-name=${service}`);
    const list = (await this.#request('GET', `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(this.#namespace)}/endpointslices?labelSelector=${selector}`)) as {
      items?: Array<{ endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean } }> }>;
    };
    return (list.items ?? []).flatMap((slice) => (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses?.slice(0, 1) ?? []));
  }

  async clusterUsage(name: string): Promise<MonthTotals | null> {
    const account = (await this.#request('GET', this.#path('Account', name))) as Account;
    const usage = (account.status as { usage?: Partial<Record<keyof MonthTotals, unknown>> } | undefined)?.usage;
    if (!usage || typeof usage.month !== 'string') return null;
    return { month: usage.month, requests: Number(usage.requests) || 0, inputTokens: Number(usage.inputTokens) || 0, outputTokens: Number(usage.outputTokens) || 0, ...statusSpend(usage.spend) };
  }

  async #create(kind: Kind, object: Account | ApiKey): Promise<void> {
    try {
      await this.#request('POST', this.#path(kind), { ...object, metadata: { ...object.metadata, namespace: this.#namespace } });
    } catch (error) {
      if (error instanceof KubeStatusError && error.statusCode === 409) throw new ConflictError(`${kind} ${object.metadata.name} exists`);
      throw error;
    }
  }

  async #request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const server = this.#config.getCurrentCluster()?.server;
    if (!server) throw new Error('the kubeconfig names no cluster server');
    const base = new URL(server);
    const options: https.RequestOptions = { method, headers: {} };
    await this.#config.applyToHTTPSOptions(options);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = { ...(options.headers as Record<string, string>), accept: 'application/json', 'user-agent': 'tollgate-console' };
    if (text !== undefined) Object.assign(headers, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
    const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
    const transport = base.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const request = transport.request(url, { ...options, headers, timeout: REQUEST_TIMEOUT_MS }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> = {};
          try {
            parsed = raw ? JSON.parse(raw) : {};
          } catch {
            parsed = { message: raw.slice(0, 200) };
          }
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(parsed);
          reject(new KubeStatusError(status, `${method} ${path}: HTTP ${status}: ${String(parsed.message ?? '').slice(0, 300)}`));
        });
      });
      request.on('timeout', () => request.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      request.on('error', reject);
      request.end(text);
    });
  }
}

/** The operator writes spend as "12.34 USD" (the Account's SPEND column): micros and currency, or nothing when it is not that. */
export function statusSpend(value: unknown): { spend: number | null; currency: string | null } {
  const match = typeof value === 'string' ? /^(\S+) ([A-Z]{3})$/.exec(value.trim()) : null;
  if (!match) return { spend: null, currency: null };
  try {
    return { spend: parseMoney(match[1]), currency: match[2] };
  } catch {
    return { spend: null, currency: null };
  }
}
