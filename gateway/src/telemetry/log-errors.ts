// How an error appears in a log line. pino's default serializer copies every enumerable property, and
// Node's HTTP parser errors carry `rawPacket`: the request's bytes, Authorization header included. So
// errors are logged through an allow-list of fields, their texts clipped, and anything shaped like an
// API key masked, whatever the error's origin.

const MAX_TEXT = 2000;
const MAX_CAUSES = 3;
/** `<prefix>_sk_<secret>`, as keys.ts issues them; also catches keys quoted inside an error message. */
const KEY_SHAPE = /([A-Za-z0-9]{1,32}_sk_)[A-Za-z0-9_-]{4,}/g;
/** `Bearer <anything>`: an upstream credential quoted in a message. */
const BEARER = /(bearer\s+)[^\s"',;]+/gi;

export interface LoggedError {
  type: string;
  message: string;
  code?: string;
  status?: number;
  stack?: string;
  cause?: LoggedError;
}

export function scrubText(text: string): string {
  const clipped = text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
  return clipped.replace(KEY_SHAPE, '$1****').replace(BEARER, '$1****');
}

export function serializeError(error: unknown, depth = 0): LoggedError | string {
  if (error === null || typeof error !== 'object') return scrubText(String(error));
  const e = error as { name?: unknown; constructor?: { name?: string }; message?: unknown; code?: unknown; status?: unknown; statusCode?: unknown; stack?: unknown; cause?: unknown };
  const logged: LoggedError = {
    type: typeof e.constructor?.name === 'string' ? e.constructor.name : typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? scrubText(e.message) : '',
  };
  if (typeof e.code === 'string' || typeof e.code === 'number') logged.code = String(e.code);
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  if (status !== undefined) logged.status = status;
  if (typeof e.stack === 'string') logged.stack = scrubText(e.stack);
  if (e.cause !== undefined && depth < MAX_CAUSES) {
    const cause = serializeError(e.cause, depth + 1);
    if (typeof cause === 'object') logged.cause = cause;
  }
  return logged;
}

/** The serializers every gateway logger uses, for the keys errors are logged under. */
export const errorSerializers = { err: (error: unknown) => serializeError(error), error: (error: unknown) => serializeError(error) };
