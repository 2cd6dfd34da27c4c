// Layer: the gateway's credential in place of the client's key, the model rewritten to the target's
// name, the body's bytes for this attempt. No credential configured: the attempt is skipped (502 if
// no other target answers), never sent without one.
import { jsonBytesToForward } from '../http/body.ts';
import type { Credentials } from './credentials.ts';
import type { Layer } from './call.ts';

export function withCredentials(credentials: Credentials): Layer {
  // Not an async function: a JSON call (nearly all of them) goes on to the next layer without a
  // promise of its own; only a form is awaited.
  return (next) => (call) => {
    const { attempt, request } = call;
    const secret = credentials.for(attempt.upstream);
    if (secret === undefined) return Promise.resolve({ kind: 'skipped', why: 'missing_credentials' });
    call.secret = secret;
    const headers = call.headers;
    const extra = attempt.upstream.spec.headers;
    if (extra) for (const name in extra) headers[name.toLowerCase()] ??= extra[name];
    if (secret) headers.authorization = `Bearer ${secret}`;
    if (request.json) {
      call.body = jsonBytesToForward(request.json, attempt.upstreamModel);
      headers['content-type'] = 'application/json';
    } else if (request.form) {
      // undici sets the multipart content type (with its boundary) and the exact Content-Length itself.
      return request.form(attempt).then((form) => {
        call.body = form as never;
        return next(call);
      });
    }
    return next(call);
  };
}
