// Kubernetes: the gateway's pods serve the API, not the console's, so the per-day chart is the sum of
// every ready gateway endpoint's `GET /usage/days?account=` on its metrics port (as the operator sums
// `GET /usage` for Account.status.usage), and a key's last use is the latest any replica saw.
// Replicas that do not answer in time are left out.
import { addMonth, emptyMonth, type AccountMonth } from './usage-days.ts';

const TIMEOUT_MS = 2000;
const MAX_REPLICAS = 100;

export class ReplicaUsage {
  readonly #addresses: () => Promise<string[]>;
  readonly #port: number;

  constructor(addresses: () => Promise<string[]>, port: number) {
    this.#addresses = addresses;
    this.#port = port;
  }

  /** The account's month summed over the replicas that answered; null when none did. */
  async accountMonth(account: string, month: string): Promise<AccountMonth | null> {
    const addresses = (await this.#addresses()).slice(0, MAX_REPLICAS);
    const answers = await Promise.allSettled(
      addresses.map(async (address) => {
        const host = address.includes(':') ? `[${address}]` : address;
        const response = await fetch(`http://${host}:${this.#port}/usage/days?account=${encodeURIComponent(account)}`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.json();
      }),
    );
    const usage = emptyMonth();
    let answered = 0;
    for (const answer of answers) {
      if (answer.status !== 'fulfilled') continue;
      answered += 1;
      addMonth(usage, month, answer.value);
    }
    return answered > 0 ? usage : null;
  }
}
