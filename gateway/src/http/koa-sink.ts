// The ResponseSink of upstream/ over a Koa context: the one place where an upstream answer meets Koa.
import type { Context } from 'koa';
import type { ResponseSink } from '../upstream/sink.ts';

export function koaSink(ctx: Context): ResponseSink {
  return {
    requestHeader: (name) => ctx.get(name),
    status: (code) => void (ctx.status = code),
    header: (name, value) => ctx.set(name, value),
    type: (contentType) => void (ctx.type = contentType),
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
