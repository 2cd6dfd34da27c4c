#!/usr/bin/env node
// `npm run -s operator` / the image's `tollgate-operator`: the Tollgate control plane. Kubeconfig from
// KUBECONFIG (or in-cluster), namespace from TOLLGATE_NAMESPACE; SIGTERM releases the leader Lease.
import { pino } from 'pino';
import { loadOperatorConfig } from './config.ts';
import { startOperator } from './operator.ts';

const config = loadOperatorConfig();
const log = pino({ level: config.logLevel, base: { service: 'tollgate-operator' }, timestamp: pino.stdTimeFunctions.isoTime });

try {
  const operator = await startOperator(config, log);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    operator.stop().then(
      () => process.exit(0),
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
