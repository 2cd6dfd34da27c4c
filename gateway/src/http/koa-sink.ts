// The ResponseSink of upstream/ over a Koa context: the one place where an upstream answer meets Koa.
import type { Context } from 'koa';
import type { ResponseSink } from '../upstream/sink.ts';

/**
 * Content-Type values as Koa completes them (`application/json` → `application/json; charset=utf-8`):
 * its setter looks the type up in the MIME database on every answer. Bounded: an upstream chooses
 * the types it sends.
 */
const completedTypes = new Map<string, string>();
const MAX_COMPLETED_TYPES = 64;

function setType(ctx: Context, contentType: string): void {
  const completed = completedTypes.get(contentType);
  if (completed !== undefined) return void ctx.res.setHeader('Content-Type', completed);
  ctx.type = contentType;
  const value = ctx.response.get('Content-Type');
  if (typeof value === 'string' && value && completedTypes.size < MAX_COMPLETED_TYPES) completedTypes.set(contentType, value);
}

export function koaSink(ctx: Context): ResponseSink {
  return {
    requestHeader: (name) => ctx.get(name),
    status: (code) => void (ctx.status = code),
    header: (name, value) => ctx.set(name, value),
    type: (contentType) => setType(ctx, contentType),
    send: (body) => void (ctx.body = body),
    pipe: (body, length) => {
      // Body first: Koa drops a Content-Length set before a stream body replaces another body.
      ctx.body = body;
      if (length !== undefined) ctx.length = length;
    },
    takeOver: () => {
      // Koa pipes bodies with stream.pipeline, which costs an AbortController per stream; an event
      // stream is written by hand instead (event-stream.ts).
      ctx.respond = false;
      ctx.req.socket.setNoDelay(true);
      return ctx.res;
    },
  };
}
