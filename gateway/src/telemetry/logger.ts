// JSON logs through pino. Asynchronous destination so a log line never blocks a request; request
// logs name keys by resource name only (see http/access-log.ts).
import { pino, type DestinationStream, type Logger } from 'pino';

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    { level, base: { service: 'tollgate-gateway' }, timestamp: pino.stdTimeFunctions.isoTime, redact: ['req.headers.authorization', '*.authorization', 'authorization'] },
    destination ?? pino.destination({ sync: false }),
  );
}
