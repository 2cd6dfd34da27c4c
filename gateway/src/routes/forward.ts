// The one way a route hands a request for an upstream-backed model to the proxy.
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import type { JsonObject } from '../http/body.ts';
import { proxyToUpstream, type ProxyRequest } from '../upstream/proxy.ts';
import type { ResolvedModel } from './model-access.ts';
import { koaSink } from '../http/koa-sink.ts';
import { exchangeOf } from './model-access.ts';

export function forwardJson(ctx: Context, deps: GatewayDeps, resolved: Extract<ResolvedModel, { kind: 'upstream' }>, endpoint: string, json: JsonObject, extra: Partial<ProxyRequest> = {}): Promise<void> {
  return proxyToUpstream(exchangeOf(ctx), koaSink(ctx), deps.upstreams, resolved.model, { endpoint, method: 'POST', json, ...extra });
}
