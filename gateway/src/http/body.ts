// JSON request bodies. The declared Content-Length is checked before reading a byte, and an
// undeclared (chunked) body is cut off as soon as it passes the limit, so an oversized request
// costs at most the limit and never the whole upload.
import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { ApiError, invalidRequest, payloadTooLarge } from './errors.ts';

export type JsonObject = Record<string, unknown>;

export async function readJsonBody(ctx: Context, maxBytes: number): Promise<JsonObject> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > maxBytes) throw payloadTooLarge(maxBytes);
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit: maxBytes, length: Number.isFinite(declared) ? declared : undefined, encoding: 'utf8' });
  } catch (error) {
    const e = error as { type?: string };
    if (e.type === 'entity.too.large') throw payloadTooLarge(maxBytes);
    if (e.type === 'request.aborted') throw new ApiError(400, 'request_aborted', 'The client closed the request before the body was complete.');
    if (e.type === 'request.size.invalid') throw invalidRequest('The request body is shorter or longer than its Content-Length.');
    throw invalidRequest('The request body could not be read.');
  }
  if (text.trim() === '') throw invalidRequest('The request body is empty; send a JSON object.', null, 'invalid_json');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidRequest(`We could not parse the JSON body of your request: ${(error as Error).message}`, null, 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  }
  return value as JsonObject;
}
