// Where an upstream answer is written: a small surface over the client's response, so that nothing
// below routes/ needs a Koa context. The edge's adapter is http/koa-sink.ts.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

export interface ResponseSink {
  /** A request header of the client's (accept, openai-beta), '' when absent. */
  requestHeader(name: string): string;
  status(code: number): void;
  header(name: string, value: string): void;
  /** The content type, completed as the edge does it (a charset for text types). */
  type(contentType: string): void;
  /** Answers with these bytes. */
  send(body: Buffer): void;
  /** Answers with a stream, piped with backpressure, and its length when known. */
  pipe(body: Readable, length?: number): void;
  /** The response itself, for an event stream written by hand; status and headers set so far go with it. */
  takeOver(): ServerResponse;
}
