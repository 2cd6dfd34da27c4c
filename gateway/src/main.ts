// `npm start`: the gateway on the embedded default (file source + service-test), or on the file
// named by TOLLGATE_CONFIG.
import { loadConfig } from './config.ts';
import { startGateway } from './server.ts';
import { createLogger } from './telemetry/logger.ts';

const config = loadConfig();
const log = createLogger(config.logLevel);

try {
  const gateway = await startGateway(config, log);
  const source = config.source === 'kubernetes' ? { source: 'kubernetes', namespace: config.kubernetes.namespace } : { source: 'file', config: config.configFile };
  log.info({ url: gateway.url, ...source, dataDir: config.dataDir, metrics: gateway.telemetry.metricsURL, tracing: config.telemetry.tracing.reason }, 'tollgate gateway listening');
  if (gateway.demoKey) {
    // Printed once, to the terminal only, never through the logger: only its hash was stored.
    process.stderr.write(
      `\nA demo API key was created for account "demo" (free tier: service-test only).\n` +
        `It is shown only this once; ${config.configFile} keeps only its SHA-256 hash:\n\n    ${gateway.demoKey}\n\n` +
        `Try it:  curl ${gateway.url}/v1/models -H "Authorization: Bearer ${gateway.demoKey}"\n\n`,
    );
  }
  if (gateway.consoleLink) {
    // Like the demo key: to the terminal only, never through the logger. One use, fifteen minutes.
    process.stderr.write(`The account area for "demo" (one-time sign-in link, valid 15 minutes):\n\n    ${gateway.consoleLink}\n\n`);
  }
  // First SIGTERM/SIGINT: drain gracefully (server.ts), flush, exit 0. A second one: exit at once.
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting at once');
      log.flush();
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, graceMs: config.shutdown.graceMs }, 'shutting down');
    gateway.shutdown().then(
      () => {
        log.flush();
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        log.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
} catch (error) {
  log.fatal({ err: error }, (error as Error).message);
  log.flush();
  process.exitCode = 1;
}
