// What route families are given at start-up. Each family builds its own stores from these and
// registers clean-up with onClose, so server.ts never has to know their internals.
import type { Logger } from 'pino';
import type { GatewayConfig } from './config.ts';
import type { ResourceStore } from './resources/store.ts';

export interface GatewayDeps {
  config: GatewayConfig;
  store: ResourceStore;
  log: Logger;
  /** Registers work to run when the server closes (timers, open files). */
  onClose(hook: () => void | Promise<void>): void;
}
