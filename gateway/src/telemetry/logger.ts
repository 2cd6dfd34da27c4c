// JSON logs through pino. Asynchronous destination so a log line never blocks a request; request
// logs name keys by resource name only (see http/access-log.ts).
import { pino, type DestinationStream, type Logger } from 'pino';
import { errorSerializers } from './log-errors.ts';

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    { level, base: { service: 'tollgate-gateway' }, timestamp: isoTimestamp, redact: ['req.headers.authorization', '*.authorization', 'authorization'], serializers: errorSerializers },
    destination ?? pino.destination({ sync: false }),
  );
}

/**
 * The logger the gateway writes through, whatever logger it was given (tests and the benchmark pass
 * their own): errors always go through the allow-list serializer, never pino's copy-everything one.
 */
export function withSafeErrors(log: Logger): Logger {
  return log.child({}, { serializers: errorSerializers });
}

let cachedSecond = -1;
let cachedPrefix = '';

/**
 * `,"time":"2026-11-22T08:05:55.123Z"`, as pino's isoTime writes it, but with the date formatted
 * once per second: `toISOString` on every line was about 1% of the CPU of a proxied request.
 */
export function isoTimestamp(now = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = `,"time":"${new Date(second * 1000).toISOString().slice(0, 20)}`;
  }
  const ms = now - second * 1000;
  return `${cachedPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}
