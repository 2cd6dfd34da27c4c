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
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    await gateway.close();
    log.flush();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
} catch (error) {
  log.fatal({ err: error }, (error as Error).message);
  log.flush();
  process.exitCode = 1;
}
