#!/usr/bin/env node
// `npm run -s operator` / the image's `tollgate-operator`: the Tollgate control plane. Kubeconfig from
// KUBECONFIG (or in-cluster), namespace from TOLLGATE_NAMESPACE; SIGTERM abandons the work in flight,
// releases the leader Lease and exits within a few seconds, whatever the API server does.
import { pino } from 'pino';
import { loadOperatorConfig } from './config.ts';
import { LEASE_RELEASE_TIMEOUT_MS, startOperator } from './operator.ts';

/** Beyond the Lease release's own timeout, a margin for closing what was abandoned. */
const SHUTDOWN_DEADLINE_MS = LEASE_RELEASE_TIMEOUT_MS + 3000;

const config = loadOperatorConfig();
const log = pino({ level: config.logLevel, base: { service: 'tollgate-operator' }, timestamp: pino.stdTimeFunctions.isoTime });

try {
  const operator = await startOperator(config, log);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const started = performance.now();
    // A backstop only: stop() abandons every call and bounds the Lease release itself; something
    // that cannot be aborted (a hung credential plugin) must still not keep the process alive.
    setTimeout(() => {
      log.error({ deadlineMs: SHUTDOWN_DEADLINE_MS }, 'shutdown did not finish in time; exiting anyway');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    operator.stop().then(
      () => {
        log.info({ ms: Math.round(performance.now() - started) }, 'stopped');
        process.exit(0);
      },
      (error) => {
        log.error({ err: (error as Error).message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (error) {
  log.fatal({ err: (error as Error).message }, 'the operator could not start');
  process.exit(1);
}
