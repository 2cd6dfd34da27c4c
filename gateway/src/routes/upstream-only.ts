// /v1/batches and /v1/threads (every method and sub-path) exist only where an upstream provides them;
// service-test has no batch queue or assistant state to offer. Until proxying lands (a later issue)
// the gateway answers a 400 that tells the developer which of their models could serve the call, so
// an integration fails with a reason instead of a bare 404.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { GatewayDeps } from '../deps.ts';
import { ApiError } from '../http/errors.ts';
import { SERVICE_TEST_MODEL } from '../resources/snapshot.ts';
import { principalOf } from './model-access.ts';

interface UpstreamOnlyFamily {
  path: string;
  /** What the API is called in messages. */
  label: string;
  /** Model `capabilities` hints that claim support; a model without hints may support anything. */
  capabilities: readonly string[];
}

const FAMILIES: readonly UpstreamOnlyFamily[] = [
  { path: '/v1/batches', label: 'batches', capabilities: ['batches', 'batch'] },
  { path: '/v1/threads', label: 'threads (Assistants)', capabilities: ['threads', 'assistants'] },
];

export function registerUpstreamOnlyRoutes(router: Router, _deps: GatewayDeps): void {
  for (const family of FAMILIES) {
    // path-to-regexp v8 syntax: the optional wildcard group matches the bare path and every sub-path.
    router.all(`${family.path}{/*rest}`, (ctx) => {
      throw unsupportedForServiceTest(ctx, family);
    });
  }
}

function unsupportedForServiceTest(ctx: Context, family: UpstreamOnlyFamily): ApiError {
  const principal = principalOf(ctx);
  const candidates: string[] = [];
  for (const entry of principal.catalogue.entries) {
    const model = principal.snapshot.models.get(entry.id);
    if (!model || entry.id === SERVICE_TEST_MODEL) continue;
    const hints = model.spec.capabilities;
    if (hints && !hints.some((hint) => family.capabilities.includes(hint))) continue;
    candidates.push(entry.id);
  }
  const planName = principal.plan?.metadata.name;
  const opening = `The ${family.label} API (${family.path}) is not supported by ${SERVICE_TEST_MODEL}, the built-in free model: it is served only by upstream providers.`;
  let advice: string;
  if (candidates.length > 0) {
    advice = `Models of your plan '${planName}' whose upstream may support it: ${candidates.join(', ')}.`;
  } else if (planName) {
    advice = `Your plan '${planName}' includes no upstream model that supports it; use a paid plan with a model whose upstream supports ${family.label}.`;
  } else {
    advice = `Your account's plan includes no upstream model (the free tier has only ${SERVICE_TEST_MODEL}); use a paid plan with a model whose upstream supports ${family.label}.`;
  }
  return new ApiError(400, 'unsupported_for_model', `${opening} ${advice}`);
}
