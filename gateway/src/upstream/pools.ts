// One undici Pool per upstream, reused across requests and snapshots. A pool is replaced only when
// its upstream's address or pool settings change, and closed gracefully (in-flight requests finish).
import { Pool } from 'undici';
import type { Upstream } from '@tollgate/crds';
import type { Snapshot } from '../resources/snapshot.ts';
import { settingsOf, type UpstreamSettings } from './settings.ts';

interface Entry {
  signature: string;
  pool: Pool;
  /** The settings last found to match: the same settings object again needs no signature (one per Upstream object). */
  settings: UpstreamSettings;
}

export class UpstreamPools {
  #entries = new Map<string, Entry>();

  get(upstream: Upstream): Pool {
    const settings = settingsOf(upstream);
    const existing = this.#entries.get(upstream.metadata.name);
    if (existing?.settings === settings) return existing.pool;
    const signature = `${settings.baseURL.origin}|${settings.connectMs}|${settings.maxConnections}`;
    if (existing?.signature === signature) {
      existing.settings = settings;
      return existing.pool;
    }
    if (existing) void existing.pool.close();
    const pool = new Pool(settings.baseURL.origin, {
      connections: settings.maxConnections,
      connect: { timeout: settings.connectMs },
      keepAliveTimeout: 30_000,
      // Per-request timeouts are set on each request; these are only the outer bounds.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.#entries.set(upstream.metadata.name, { signature, pool, settings });
    return pool;
  }

  /** Closes pools of upstreams that left the snapshot. */
  prune(snapshot: Snapshot): void {
    for (const [name, entry] of this.#entries) {
      if (!snapshot.upstreams.has(name)) {
        void entry.pool.close();
        this.#entries.delete(name);
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => e.pool.destroy()));
    this.#entries.clear();
  }
}
