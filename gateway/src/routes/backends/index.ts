// The backends of one gateway, built once when the routes are registered.
import type { GatewayDeps } from '../../deps.ts';
import type { ResponseStore } from '../../storage/response-store.ts';
import type { Backends } from './backend.ts';
import type { StoredResponse } from './service-test-responses.ts';
import { createServiceTestBackend } from './service-test.ts';
import { createUpstreamBackend } from './upstream.ts';

export function createBackends(deps: GatewayDeps, responses: ResponseStore<StoredResponse>): Backends {
  const serviceTest = createServiceTestBackend(deps, responses);
  const upstream = createUpstreamBackend(deps);
  return { of: (resolved) => (resolved.kind === 'service-test' ? serviceTest : upstream) };
}
