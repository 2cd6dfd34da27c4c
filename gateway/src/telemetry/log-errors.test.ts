import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { serializeError } from './log-errors.ts';
import { withSafeErrors } from './logger.ts';

const KEY = 'tg_sk_7k5bzVFCBBLVIULQDPPk4jxSl_ZPocvbibHbfE8Lcw';

/** An HTTP parser error as Node builds it: the raw request, Authorization header included, in `rawPacket`. */
function parserError(): Error {
  const error = Object.assign(new Error('Parse Error: Invalid character in chunk size'), {
    code: 'HPE_INVALID_CHUNK_SIZE',
    bytesParsed: 180,
    rawPacket: Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`),
  });
  return error;
}

function logged(write: (log: pino.Logger) => void): string {
  let text = '';
  const sink = new Writable({ write: (chunk, _e, done) => ((text += chunk), done()) });
  write(withSafeErrors(pino({}, sink)));
  return text;
}

describe('errors in log lines', () => {
  it('keep known fields only: no raw request bytes, in any form', () => {
    const text = logged((log) => log.error({ err: parserError() }, 'failed'));
    expect(text).toContain('HPE_INVALID_CHUNK_SIZE');
    expect(text).not.toContain('rawPacket');
    expect(text).not.toContain(KEY.slice(-12));
    expect(text).not.toContain([...Buffer.from(KEY.slice(-12))].join(','));
  });

  it('mask anything shaped like a key or a bearer credential in messages, stacks and causes', () => {
    const cause = new Error(`upstream said: Authorization: Bearer sk-live-abcdef0123456789`);
    const error = new Error(`Incorrect API key ${KEY}`, { cause });
    const serialized = JSON.stringify(serializeError(error));
    expect(serialized).not.toContain(KEY.slice(7));
    expect(serialized).toContain('tg_sk_****');
    expect(serialized).not.toContain('sk-live-abcdef0123456789');
  });

  it('survive values that are not errors', () => {
    expect(serializeError('plain text')).toBe('plain text');
    expect(serializeError({ message: 42, code: 7 })).toEqual({ type: 'Object', message: '', code: '7' });
  });
});
