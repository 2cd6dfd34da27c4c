// Multipart requests (image edits, transcriptions, translations, file uploads) read once into the
// spool, then either served in-process (service-test) or relayed: the form is rebuilt for each
// attempt with the model field rewritten to the target's name, file parts streamed from disk.
import type { Context } from 'koa';
import type { Upstream } from '@tollgate/crds';
import type { GatewayDeps } from '../deps.ts';
import type { FormBody } from '../http/multipart.ts';
import type { GatewayState } from '../http/state.ts';
import type { SpooledForm } from '../storage/multipart-spool.ts';
import { proxyToUpstream, proxyToUpstreamDirect, type ProxyRequest } from '../upstream/proxy.ts';
import { exchangeOf, type ResolvedModel } from './model-access.ts';
import { koaSink } from '../http/koa-sink.ts';

/** The Koa edge of form reading: the request and response, the limits and the exchange's abort signal. */
export function formBodyOf(ctx: Context, deps: GatewayDeps): FormBody {
  return { req: ctx.req, res: ctx.res, maxBytes: deps.config.maxBodyBytes, policy: (ctx.state as GatewayState).bodyPolicy ?? null, signal: exchangeOf(ctx).signal };
}

/**
 * Reads the request's form into the spool and runs `use` with it; the spooled files are removed
 * when `use` settles (and, as a safety net, when the exchange ends), whatever the outcome.
 */
export async function withSpooledForm<T>(ctx: Context, deps: GatewayDeps, use: (form: SpooledForm) => Promise<T>): Promise<T> {
  const form = await deps.spool.read(formBodyOf(ctx, deps));
  exchangeOf(ctx).onEnd(() => form.cleanup());
  try {
    return await use(form);
  } finally {
    await form.cleanup();
  }
}

/** Relays a spooled form to the model's targets, with `model` rewritten per target. */
export function relayForm(ctx: Context, deps: GatewayDeps, resolved: Extract<ResolvedModel, { kind: 'upstream' }>, endpoint: string, form: SpooledForm, extra: Partial<ProxyRequest> = {}): Promise<void> {
  return proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, resolved.model, {
    endpoint,
    method: 'POST',
    form: (attempt) => form.toFormData(attempt.upstreamModel === null ? {} : { model: attempt.upstreamModel }),
    ...extra,
  });
}

/** Relays a spooled form that names no model (a file upload) to one upstream, as the client sent it. */
export function relayFormDirect(ctx: Context, deps: GatewayDeps, upstream: Upstream, endpoint: string, form: SpooledForm, extra: Partial<ProxyRequest> = {}): Promise<void> {
  return proxyToUpstreamDirect(exchangeOf(ctx), koaSink(ctx), deps.upstreams, upstream, { endpoint, method: 'POST', form: () => form.toFormData(), ...extra });
}
