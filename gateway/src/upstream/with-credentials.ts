// Layer: the gateway's credential in place of the client's key, the model rewritten to the target's
// name, the body's bytes for this attempt. No credential configured: the attempt is skipped (502 if
// no other target answers), never sent without one.
import { jsonBytesToForward } from '../http/body.ts';
import { forOpenAICompatible } from '../providers/cache-markers.ts';
import { isTranslated } from '../providers/registry.ts';
import type { Credentials } from './credentials.ts';
import type { Layer } from './call.ts';
import { settingsOf } from './settings.ts';

export function withCredentials(credentials: Credentials): Layer {
  // Not an async function: a JSON call (nearly all of them) goes on to the next layer without a
  // promise of its own; only a form is awaited.
  return (next) => (call) => {
    const { attempt, request } = call;
    // A translated provider's request and credential are the provider layer's (with-provider-auth.ts).
    if (isTranslated(attempt.upstream)) return next(call);
    const secret = credentials.for(attempt.upstream);
    if (secret === undefined) return Promise.resolve({ kind: 'skipped', why: 'missing_credentials' });
    call.secret = secret;
    const headers = call.headers;
    const extra = attempt.upstream.spec.headers;
    if (extra) for (const name in extra) headers[name.toLowerCase()] ??= extra[name];
    const azure = attempt.upstream.spec.azure;
    if (azure) {
      // Azure OpenAI's deployments API: the key in api-key, the deployment (the target's model) in
      // the path, the API version in the query; bodies and answers are OpenAI's.
      if (secret) headers['api-key'] = secret;
      const deployment = attempt.upstreamModel === null ? '' : `/deployments/${encodeURIComponent(attempt.upstreamModel)}`;
      const query = `api-version=${encodeURIComponent(azure.apiVersion)}`;
      const search = request.search ? `${request.search}&${query}` : `?${query}`;
      call.path = `${settingsOf(attempt.upstream).basePath}openai${deployment}${request.endpoint}${search}`;
    } else if (secret) headers.authorization = `Bearer ${secret}`;
    if (request.json) {
      call.body = jsonBytesToForward(forOpenAICompatible(request.json), attempt.upstreamModel);
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
