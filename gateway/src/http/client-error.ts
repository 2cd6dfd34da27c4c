// Requests that Node's HTTP parser refuses before or while Koa handles them (a bad chunk size, bytes
// after a short Content-Length, oversized headers, a header timeout). Node's default answer is a bare
// text/plain 400; clients here get OpenAI's error body and a request id, and the log gets the parser's
// code only: the error object holds the raw request bytes, Authorization header included.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { newRequestId } from './request-id.ts';

/** Errors that are ordinary traffic: a client that went away, mid-request or mid-answer. */
const DISCONNECTS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'HPE_INVALID_EOF_STATE']);

export function isClientFault(error: { code?: unknown }): boolean {
  const code = typeof error.code === 'string' ? error.code : '';
  return DISCONNECTS.has(code) || code.startsWith('HPE_') || code === 'ERR_HTTP_REQUEST_TIMEOUT';
}

function answerFor(code: string): { status: number; reason: string; code: string; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'Request Header Fields Too Large', code: 'request_headers_too_large', message: 'The request headers are too large.' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, reason: 'Payload Too Large', code: 'request_too_large', message: 'The chunk extensions of the request are too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, reason: 'Request Timeout', code: 'request_timeout', message: 'The request was not received in time.' };
    default:
      return { status: 400, reason: 'Bad Request', code: 'malformed_request', message: 'The request is not valid HTTP/1.1 and could not be read.' };
  }
}

export function answerClientErrors(server: Server, log: Logger): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => {
    const code = typeof error.code === 'string' ? error.code : 'UNKNOWN';
    log.debug({ code }, 'malformed request or client gone');
    // Like Node's own handler: answer unless an answer is being written on this connection (its
    // bytes would interleave). A keep-alive connection whose earlier answers are complete gets one.
    const current = (socket as Socket & { _httpMessage?: { headersSent: boolean; writableFinished: boolean } | null })._httpMessage;
    const answering = current !== null && current !== undefined && current.headersSent && !current.writableFinished;
    if (code !== 'ECONNRESET' && socket.writable && !answering) {
      const answer = answerFor(code);
      const id = newRequestId();
      const body = JSON.stringify({ error: { message: answer.message, type: 'invalid_request_error', param: null, code: answer.code } });
      socket.write(
        `HTTP/1.1 ${answer.status} ${answer.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `X-Service-Request-Id: ${id}\r\nx-request-id: ${id}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  });
}
