// Headers the gateway formats itself (request ids, rate-limit headers), set straight on the Node
// response: Koa 3's ctx.set builds three arrays per call (Object.entries, a map, the pairs) to
// normalise values these never need normalised, and it ran a dozen times per request.
import type { Context } from 'koa';

export function setHeader(ctx: Context, name: string, value: string): void {
  if (!ctx.res.headersSent) ctx.res.setHeader(name, value);
}

export function setHeaders(ctx: Context, headers: Record<string, string>): void {
  if (ctx.res.headersSent) return;
  for (const name in headers) ctx.res.setHeader(name, headers[name]);
}
