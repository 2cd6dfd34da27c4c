// The last step every source shares: hand a validated resource list to the store, which builds and
// swaps the snapshot, and report it in the same words whichever source it came from. Reference
// problems (a key of a missing account …) are warnings; a source that rebuilds often passes the
// warnings it already reported so a standing problem is logged once, not on every change.
import type { AnyResource } from '@tollgate/crds';
import type { Logger } from 'pino';
import type { Snapshot } from './snapshot.ts';
import type { ResourceStore } from './store.ts';

export function applyResources(store: ResourceStore, resources: readonly AnyResource[], log: Logger, bindings: Record<string, unknown>, reported: ReadonlySet<string> = new Set()): Snapshot {
  const snapshot = store.apply(resources);
  for (const warning of snapshot.warnings) if (!reported.has(warning)) log.warn(bindings, warning);
  log.info({ ...bindings, resources: resources.length, keys: snapshot.keysByHash.size, generation: store.generation }, 'resources loaded');
  return snapshot;
}
