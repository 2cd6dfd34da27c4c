// Layer: the gateway's credential in place of the client's key, the model rewritten to the target's
// name, the body's bytes for this attempt. No credential configured: the attempt is skipped (502 if
// no other target answers), never sent without one.
import { jsonBytesToForward } from '../http/body.ts';
import type { Credentials } from './credentials.ts';
import type { Layer } from './call.ts';

export function withCredentials(credentials: Credentials): Layer {
  return (next) => async (call) => {
    const { attempt, request } = call;
    const secret = credentials.for(attempt.upstream);
    if (secret === undefined) return { kind: 'skipped', why: 'missing_credentials' };
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
      call.body = (await request.form(attempt)) as never;
    }
    return next(call);
  };
}
